"""RELEVANT HISTORY: time expressions, query analysis, ranking, CJK text, explanations."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest

from rheo_cli.memory.context import assemble as context
from rheo_cli.memory.ledger import digests
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.retrieval import history
from rheo_cli.memory.retrieval.query import analyse
from rheo_cli.memory.retrieval.timeexpr import resolve
from rheo_cli.memory.store.settings import Settings

SUNDAY = datetime(2026, 11, 29, 21, 0, tzinfo=timezone(timedelta(hours=1)))
S = Settings()


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [
        ("what did we discuss last month?", "2026-10-01", "2026-11-01"),
        ("anything in March?", "2026-03-01", "2026-04-01"),
        ("two weeks ago", "2026-11-11", "2026-11-19"),
        ("yesterday", "2026-11-28", "2026-11-29"),
        ("on Tuesday", "2026-11-24", "2026-11-25"),
        ("last Sunday", "2026-11-22", "2026-11-23"),
        ("in 2023", "2023-01-01", "2024-01-01"),
        ("on 8 May", "2026-05-08", "2026-05-09"),
        ("May 8th, 2023", "2023-05-08", "2023-05-09"),
        ("this week", "2026-11-23", "2026-11-30"),
        ("last year", "2025-01-01", "2026-01-01"),
        ("3 days ago", "2026-11-25", "2026-11-28"),
    ],
)
def test_time_expressions(text, start, end):
    found = resolve(text, SUNDAY)
    assert [(r.start.date().isoformat(), r.end.date().isoformat()) for r in found] == [(start, end)]


@pytest.mark.parametrize("text", ["I may go", "a sun hat", "we march on", "hello there"])
def test_words_that_are_not_dates(text):
    assert resolve(text, SUNDAY) == []


def test_generic_time_words_are_not_search_words_and_possessives_are_stripped():
    q = analyse("what did I tell you two weeks ago about Arowyn's school?", SUNDAY)
    assert q.terms == ["arowyn", "school"] and q.times[0].text == "two weeks ago"
    tuesday = analyse("what did I do on Tuesday", SUNDAY)
    assert tuesday.terms == ["tuesday"] and tuesday.times


def test_query_analysis():
    q = analyse('When did Caroline go to the LGBTQ "support group" in 2023 with 3 friends?', SUNDAY)
    assert "caroline" in q.entities and "lgbtq" in q.entities and "3" in q.entities
    assert "2023" in q.entities  # a year can match text too, besides the date range
    assert "when" not in q.terms and "the" not in q.terms
    assert q.phrases[0] == "support group"
    assert q.times and q.times[0].start.year == 2023
    assert analyse("東京で食べたラーメン", SUNDAY).runs == ["東京で食べたラーメン"]


def say(conn, text, when, role="user", **kw):
    if role == "assistant":
        kw.setdefault("status", "ok")
    return ledger.append_turn(
        conn, profile="default", role=role, content=text, now=when, gap_s=S.gap_s, **kw
    ).turn


def history_lines(ctx):
    section = ctx.section("RELEVANT HISTORY")
    return section.lines if section else []


def test_finds_an_old_turn_dated_with_its_neighbour(conn):
    t0 = datetime(2026, 10, 14, 9, 0, tzinfo=UTC)
    q = say(conn, "Can you check the Nutrifax invoice numbers?", t0)
    a = say(
        conn,
        "The Nutrifax invoices 1042 and 1043 don't match the ledger.",
        t0 + timedelta(minutes=1),
        role="assistant",
        session_id=q.session_id,
    )
    for n in range(30):
        say(
            conn,
            f"filler conversation about gardening number {n}",
            t0 + timedelta(days=10, minutes=n),
        )
    ctx = context.assemble(
        conn,
        profile="default",
        now=SUNDAY,
        settings=S,
        message="What did we discuss about Nutrifax last month?",
    )
    lines = history_lines(ctx)
    sources = [ln.source for ln in lines]
    assert f"turn:{q.id}" in sources and f"turn:{a.id}" in sources
    text = "\n".join(ln.text for ln in lines)
    assert f"[2026-10-14 10:00 #{q.id}] user: Can you check the Nutrifax invoice numbers?" in text
    hit = next(ln for ln in lines if ln.source == f"turn:{q.id}")
    assert "nutrifax" in hit.why and "in the time asked about" in hit.why
    assert not any("gardening" in ln.text for ln in lines)


def test_date_boost_prefers_the_month_asked_about(conn):
    march = datetime(2026, 3, 10, 9, 0, tzinfo=UTC)
    june = datetime(2026, 6, 10, 9, 0, tzinfo=UTC)
    say(conn, "We booked the dentist appointment for the kids", march)
    say(conn, "We booked the dentist appointment for the kids again", june)
    ctx = context.assemble(
        conn, profile="default", now=SUNDAY, settings=S, message="what about the dentist in March?"
    )
    ranked = sorted(history_lines(ctx), key=lambda ln: -ln.rank)
    assert "2026-03-10" in ranked[0].text


def test_lines_in_current_session_are_not_repeated(conn):
    t0 = SUNDAY - timedelta(minutes=30)
    first = say(conn, "Let's talk about the quarterly budget", t0)
    say(
        conn,
        "Sure, the quarterly budget is due Friday",
        t0 + timedelta(minutes=1),
        role="assistant",
        session_id=first.session_id,
    )
    ctx = context.assemble(
        conn,
        profile="default",
        now=SUNDAY,
        settings=S,
        message="remind me about the quarterly budget",
    )
    assert history_lines(ctx) == []
    assert len(ctx.section("CURRENT SESSION").lines) == 2


def test_matching_digest_of_an_older_session_is_a_history_line(conn):
    t0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    old = say(conn, "kickoff", t0)
    digests.store_digest(
        conn,
        profile="default",
        session_id=old.session_id,
        narrative="Planned the Lisbon offsite with Marta.",
        facts=[],
        procedures=[],
        decisions=[],
        source_turn_ids=[old.id],
        model="m",
        created_at="2026-01-05T10:00:00.000Z",
    )
    for n in range(6):  # push it out of the last five digests
        t = say(conn, f"later {n}", t0 + timedelta(days=n + 1))
        digests.store_digest(
            conn,
            profile="default",
            session_id=t.session_id,
            narrative=f"Other session {n}.",
            facts=[],
            procedures=[],
            decisions=[],
            source_turn_ids=[t.id],
            model="m",
            created_at="2026-01-20T10:00:00.000Z",
        )
    ctx = context.assemble(
        conn, profile="default", now=SUNDAY, settings=S, message="who came to the Lisbon offsite?"
    )
    lines = history_lines(ctx)
    assert any(ln.source.startswith("digest:") and "Lisbon offsite" in ln.text for ln in lines)
    assert "Planned the Lisbon" not in ctx.section("EPISODIC MEMORY").render()


def test_text_without_spaces_is_searchable(conn):
    t0 = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)
    say(conn, "来週の月曜日に東京タワーへ行きます", t0)
    say(conn, "今日は雨です", t0 + timedelta(days=1))
    for message in ("東京タワーはいつ行きますか", "東京"):
        ctx = context.assemble(conn, profile="default", now=SUNDAY, settings=S, message=message)
        assert any("東京タワー" in ln.text for ln in history_lines(ctx)), message


def test_long_turn_is_cut_to_its_matching_sentences(conn):
    t0 = datetime(2026, 9, 1, 9, 0, tzinfo=UTC)
    filler = " ".join(f"Sentence {n} talks about nothing much at all." for n in range(80))
    say(conn, f"{filler} The passport renewal form goes to the embassy. {filler}", t0)
    ctx = context.assemble(
        conn,
        profile="default",
        now=SUNDAY,
        settings=S,
        message="where does the passport renewal form go?",
    )
    line = history_lines(ctx)[0].text
    assert "The passport renewal form goes to the embassy." in line
    assert "…" in line and len(line) < 1200


def test_context_explain_shows_sources_and_reasons(rheo, fake_model, monkeypatch):
    monkeypatch.setenv("RHEO_NOW", "2026-10-14T09:00:00Z")
    rheo("ask", "The plumber Jorge fixed the boiler")
    # A later session, so the boiler turn is history, not the end of the previous session.
    monkeypatch.setenv("RHEO_NOW", "2026-11-02T09:00:00Z")
    rheo("ask", "I bought new running shoes")
    monkeypatch.setenv("RHEO_NOW", "2026-11-20T09:00:00Z")
    out = rheo("context", "--explain", "who fixed the boiler?").stdout
    assert "RELEVANT HISTORY" in out
    assert "turn:1" in out and "matched: fixed, boiler" in out
    data = json.loads(rheo("context", "--json", "who fixed the boiler?").stdout)
    history = next(s for s in data["sections"] if s["name"] == "RELEVANT HISTORY")
    assert history["lines"][0]["turn_ids"] and history["lines"][0]["why"]


def test_time_only_question_brings_that_weeks_turns(conn):
    last_week = datetime(2026, 11, 18, 9, 0, tzinfo=UTC)
    say(conn, "Three weeks ago topic", last_week - timedelta(days=14))
    say(conn, "I started the pottery course", last_week)
    say(conn, "an unrelated chat yesterday", SUNDAY - timedelta(days=1))  # the previous session
    ctx = context.assemble(
        conn, profile="default", now=SUNDAY, settings=S, message="what did we talk about last week?"
    )
    texts = [ln.text for ln in history_lines(ctx)]
    assert any("pottery course" in t for t in texts)
    assert not any("Three weeks ago" in t for t in texts)


def test_a_weekday_question_brings_that_days_turns(conn):
    tuesday = datetime(2026, 11, 24, 18, 0, tzinfo=UTC)
    say(conn, "quiet day at home", tuesday - timedelta(days=3))
    say(conn, "went bouldering with Sam after work", tuesday)
    say(conn, "an unrelated chat yesterday", SUNDAY - timedelta(days=1))  # the previous session
    ctx = context.assemble(
        conn, profile="default", now=SUNDAY, settings=S, message="what did I do on Tuesday?"
    )
    texts = [ln.text for ln in history_lines(ctx)]
    assert any("bouldering" in t for t in texts)
    assert not any("quiet day" in t for t in texts)


def test_a_question_about_the_person_ranks_their_own_turns_higher(conn):
    t0 = datetime(2026, 6, 10, 9, 0, tzinfo=UTC)
    mine = say(conn, "I liked the pottery classes on Thursday evenings", t0)
    other = say(
        conn,
        "Pottery classes on Thursday evenings are popular",
        t0 + timedelta(days=20),
        role="assistant",
        new_session=True,
    )
    say(conn, "the car needs new tyres", t0 + timedelta(days=40), new_session=True)
    lines = {}
    for message in ("when did I take pottery classes?", "when were pottery classes taken?"):
        ctx = context.assemble(conn, profile="default", now=SUNDAY, settings=S, message=message)
        lines[message] = {ln.source: ln for ln in history_lines(ctx)}
    asked, neutral = lines.values()
    gap_asked = asked[f"turn:{mine.id}"].rank - asked[f"turn:{other.id}"].rank
    gap_neutral = neutral[f"turn:{mine.id}"].rank - neutral[f"turn:{other.id}"].rank
    assert gap_asked - gap_neutral == pytest.approx(history.SPEAKER_WEIGHT, abs=0.05)
    assert gap_asked > 0
    assert "said by the person, as asked" in asked[f"turn:{mine.id}"].why
    assert "said by the person" not in neutral[f"turn:{mine.id}"].why
    assert "said by" not in asked[f"turn:{other.id}"].why
