"""A corpus of malformed extractor outputs: each is repaired or dropped, with a noted reason."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rheo_cli.memory.facts.parsing import parse_facts

GOOD = '{"category": "goal", "topic": "customers", "label": "Wants 50 customers by Q3"}'
PERSON = "We want to hit 50 customers by Q3 and I love the tea at the office"

# (name, model output, expected labels kept, a fragment every note list must contain)
CORPUS = [
    ("clean", f'{{"facts": [{GOOD}]}}', ["Wants 50 customers by Q3"], None),
    (
        "code fence",
        f'```json\n{{"facts": [{GOOD}]}}\n```',
        ["Wants 50 customers by Q3"],
        "code fence",
    ),
    (
        "fence without language",
        f'```\n{{"facts": [{GOOD}]}}\n```',
        ["Wants 50 customers by Q3"],
        "code fence",
    ),
    (
        "prose around",
        f'Sure! Here are the facts:\n{{"facts": [{GOOD}]}}\nHope this helps.',
        ["Wants 50 customers by Q3"],
        "text around",
    ),
    ("trailing comma", f'{{"facts": [{GOOD},]}}', ["Wants 50 customers by Q3"], "trailing commas"),
    (
        "bad escape",
        r'{"facts": [{"topic": "path", "label": "Keeps notes in C:\Users\xavier"}]}',
        ["Keeps notes in C:\\Users\\xavier"],
        "invalid escapes",
    ),
    (
        "smart quotes",
        "{“facts”: [{“topic”: “tea”, “label”: “Loves the office tea”}]}",
        ["Loves the office tea"],
        "smart quotes",
    ),
    (
        "python literal",
        "{'facts': [{'topic': 'tea', 'label': 'Loves the office tea', 'confidence': None}]}",
        ["Loves the office tea"],
        "Python-style",
    ),
    (
        "raw newline in string",
        '{"facts": [{"topic": "tea", "label": "Loves the\noffice tea"}]}',
        ["Loves the office tea"],
        "raw newlines",
    ),
    ("bare list", f"[{GOOD}]", ["Wants 50 customers by Q3"], None),
    ("single object", GOOD, ["Wants 50 customers by Q3"], "single fact object"),
    ("other key", f'{{"memories": [{GOOD}]}}', ["Wants 50 customers by Q3"], "under 'memories'"),
    ("no json", "I could not find any facts worth keeping.", [], "no JSON"),
    ("empty", "", [], "the reply was empty"),
    ("truncated", '{"facts": [{"topic": "tea", "label": "Loves', [], "no JSON"),
    ("facts not a list", '{"facts": "none"}', [], "not a list"),
    ("fact not an object", '{"facts": [42, null]}', [], "not an object"),
    ("missing label", '{"facts": [{"topic": "tea", "category": "preference"}]}', [], "no content"),
    (
        "label under another key",
        '{"facts": [{"topic": "tea", "fact": "Loves the office tea"}]}',
        ["Loves the office tea"],
        "label taken from 'fact'",
    ),
    (
        "content object (the Rheo article's shape)",
        '{"facts": [{"type": "fact", "content": {"label": "Office tea", "properties": '
        '{"kind": "green"}}, "topic": "tea"}]}',
        ["Office tea"],
        None,
    ),
    (
        "missing topic",
        '{"facts": [{"label": "Loves the office tea"}]}',
        ["Loves the office tea"],
        "no topic",
    ),
    (
        "unknown category",
        '{"facts": [{"category": "gossip", "topic": "t", "label": "Loves tea"}]}',
        ["Loves tea"],
        "unknown category",
    ),
    (
        "category alias",
        '{"facts": [{"category": "commitment", "topic": "t", "label": "Sends the report"}]}',
        ["Sends the report"],
        "read as 'open_item'",
    ),
    (
        "four facts",
        '{"facts": ['
        + ",".join(f'{{"topic": "t{n}", "label": "Fact number {n} about tea"}}' for n in range(4))
        + "]}",
        [f"Fact number {n} about tea" for n in range(3)],
        "kept the first 3",
    ),
    (
        "unknown id",
        '{"facts": [{"existing_id": 999, "topic": "tea", "label": "Loves tea"}]}',
        ["Loves tea"],
        "unknown id 999",
    ),
    (
        "id not a number",
        '{"facts": [{"id": "abc", "topic": "tea", "label": "Loves tea"}]}',
        ["Loves tea"],
        "not an id",
    ),
    (
        "confidence as text",
        '{"facts": [{"topic": "t", "label": "Loves tea", "confidence": "high"}]}',
        ["Loves tea"],
        "not a number",
    ),
    (
        "confidence percent",
        '{"facts": [{"topic": "t", "label": "Loves tea", "confidence": 90}]}',
        ["Loves tea"],
        "percentage",
    ),
    (
        "confidence negative",
        '{"facts": [{"topic": "t", "label": "Loves tea", "confidence": -2}]}',
        ["Loves tea"],
        "clamped",
    ),
    (
        "properties not object",
        '{"facts": [{"topic": "t", "label": "Loves tea", "properties": "green"}]}',
        ["Loves tea"],
        "properties were not an object",
    ),
    (
        "bad due date",
        '{"facts": [{"category": "open_item", "topic": "t", "label": "Sends the '
        'report", "due": "when it is ready"}]}',
        ["Sends the report"],
        "is not a usable date",
    ),
    (
        "owner fields",
        '{"facts": [{"topic": "t", "label": "Loves tea", "profile": "mallory", '
        '"status": "retracted", "pinned": true}]}',
        ["Loves tea"],
        "rheo decides these",
    ),
    (
        "wrong script",
        '{"facts": [{"topic": "tea", "label": "Любит чай в офисе"}]}',
        [],
        "Cyrillic".lower(),
    ),
    (
        "wrong latin language",
        '{"facts": [{"topic": "the", "label": "Elle aime le thé de la maison et les gâteaux"}]}',
        [],
        "writes in 'en'",
    ),
    (
        "json then more json",
        f'{{"facts": [{GOOD}]}} and also {{"facts": []}}',
        ["Wants 50 customers by Q3"],
        "text around",
    ),
    ("null facts", '{"facts": null}', [], None),
    ("nested junk", '{"facts": [{"topic": ["a"], "label": {"x": 1}}]}', [], "no content"),
]


@pytest.mark.parametrize(("name", "output", "labels", "note"), CORPUS, ids=[c[0] for c in CORPUS])
def test_malformed_outputs(name, output, labels, note):
    parsed = parse_facts(output, known_ids={7: "tea"}, person_text=PERSON)
    assert [c.fact.label for c in parsed.facts] == labels
    if note is not None:
        assert any(note.lower() in n.lower() for n in parsed.notes), parsed.notes
    for c in parsed.facts:
        assert c.fact.topic and c.fact.category


def test_corpus_is_big_enough():
    assert len(CORPUS) >= 20


def test_known_id_adopts_its_topic():
    parsed = parse_facts(
        '{"facts": [{"existing_id": 7, "topic": "drinks", "label": "Loves green tea"}]}',
        known_ids={7: "tea"},
        person_text=PERSON,
    )
    assert parsed.facts[0].existing_id == 7 and parsed.facts[0].fact.topic == "tea"


def test_facts_keep_the_persons_language():
    person = "Ma fille Arowyn entre en troisième à la rentrée et elle est très contente"
    out = parse_facts(
        '{"facts": [{"topic": "arowyn école", "label": "Arowyn entre en '
        'troisième à la rentrée"}, {"topic": "arowyn school", "label": "Arowyn '
        'is starting the third grade in the fall and she is happy"}]}',
        person_text=person,
    )
    assert [c.fact.label for c in out.facts] == ["Arowyn entre en troisième à la rentrée"]
    assert out.facts[0].fact.topic == "arowyn-école"


def test_cjk_person_keeps_cjk_facts():
    out = parse_facts(
        '{"facts": [{"topic": "住所", "label": "東京に住んでいる"}, '
        '{"topic": "home", "label": "Lives in Tokyo"}]}',
        person_text="私は東京に住んでいます",
    )
    assert [c.fact.label for c in out.facts] == ["東京に住んでいる"]


def test_due_dates_become_utc():
    out = parse_facts(
        '{"facts": [{"category": "open_item", "topic": "catalog", "label": '
        '"Upload the product catalog", "due": "2026-11-27"}]}'
    )
    assert out.facts[0].fact.due_at == "2026-11-27T23:59:00.000Z"  # the end of that day
    from datetime import timedelta, timezone

    local = parse_facts(
        '{"facts": [{"category": "open_item", "topic": "c", "label": "Upload it", '
        '"due": "2026-11-27"}]}',
        tz=timezone(timedelta(hours=2)),
    )
    assert local.facts[0].fact.due_at == "2026-11-27T21:59:00.000Z"


def test_due_words_are_read_by_the_one_due_date_rule():
    from datetime import datetime, timedelta, timezone

    said = datetime(2026, 11, 25, 10, 0, tzinfo=timezone(timedelta(hours=2)))  # a Wednesday
    out = parse_facts(
        '{"facts": [{"category": "open_item", "topic": "r", "label": "Sends the report", '
        '"due": "next Friday"}]}',
        now=said,
    )
    assert out.facts[0].fact.due_at == "2026-11-27T21:59:00.000Z"  # 23:59 local that Friday


def test_digest_turn_ids_are_checked():
    out = parse_facts(
        '{"facts": [{"topic": "a", "label": "x one", "turn_id": 5}, '
        '{"topic": "b", "label": "x two", "turn_id": 99}]}',
        turn_ids={5, 6},
        limit=5,
    )
    assert [c.turn_id for c in out.facts] == [5, None]
    assert any("99" in n for n in out.notes)


@given(st.text(max_size=300))
def test_never_raises_on_any_text(text):
    parse_facts(text, known_ids={1: "a"}, person_text="hello there")
