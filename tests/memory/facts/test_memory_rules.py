"""Memory rules that must hold whoever writes: negation, one count per turn, pins, forget,
bounded and idempotent background jobs, safe output."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from conftest import as_tenant
from fakeprovider import Canned, facts
from helpers import db_rows, route

from rheo_cli.memory import jobs
from rheo_cli.memory.facts import curation, items, remember
from rheo_cli.memory.facts.remember import Fact
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store.errors import InvalidInput
from rheo_cli.memory.store.settings import Settings
from rheo_cli.memory.text.render import entry

T0 = datetime(2026, 2, 1, 9, 0, tzinfo=UTC)
S = Settings()

TENANT = "p"
"""The profile these tests write (the PostgreSQL connection's tenant)."""


def turn(conn, content="x", when=T0):
    return ledger.append_turn(
        conn, profile="p", role="user", content=content, now=when, gap_s=S.gap_s
    ).turn


def put(conn, label, topic, *, source="extractor", turn_id=None, **kw):
    fact = Fact(kw.pop("category", "fact"), topic, label, **kw)
    if turn_id is None:
        return remember.remember(conn, fact, source="manual", now=T0, settings=S, profile="p")
    return remember.remember(conn, fact, source=source, now=T0, settings=S, source_turn_id=turn_id)


@pytest.mark.parametrize(
    ("before", "after", "stated"),
    [
        ("I am vegetarian", "I am not vegetarian", False),
        ("The person is vegetarian", "The person is no longer vegetarian", True),
        ("Has a dog", "Has no dog", False),
        ("The person smokes", "The person quit smoking", True),
        ("La personne est végétarienne", "La personne n'est plus végétarienne", True),
        ("Die Person raucht", "Die Person raucht nicht mehr", True),
    ],
)
def test_a_negated_or_changed_fact_supersedes(conn, before, after, stated):
    """A contradiction of two confident facts is flagged; a change stated as one ("no
    longer", "quit", "n'est plus", "nicht mehr") just applies."""
    first = put(conn, before, "diet", confidence=0.9).item
    out = put(conn, after, "diet", confidence=0.9)
    assert out.action == "superseded" and out.previous.id == first.id
    assert out.conflict is not stated


def test_contractions_are_the_same_fact(conn):
    put(conn, "I don't eat meat", "diet")
    assert put(conn, "I do not eat meat", "diet").action == "reinforced"


def test_one_turn_counts_once_for_a_fact(conn):
    t = turn(conn)
    put(conn, "Likes green tea", "tea", turn_id=t.id)
    again = put(conn, "Likes green tea", "tea", turn_id=t.id)
    assert again.action == "skipped" and "already counted" in again.note
    assert items.list_items(conn, "p")[0].reinforcements == 1


def test_a_pinned_fact_is_not_replaced_by_a_guess(conn):
    pinned = put(conn, "Allergic to penicillin", "allergy", pinned=True).item
    t = turn(conn, "what's the weather")
    guess = put(conn, "No allergies", "allergy", turn_id=t.id, confidence=0.1)
    assert guess.action == "skipped" and f"pinned #{pinned.id}" in guess.note
    assert items.get_item(conn, "p", pinned.id).status == "active"
    confident = put(conn, "Allergic to amoxicillin", "allergy", turn_id=t.id, confidence=0.9)
    assert confident.action == "superseded" and confident.conflict  # always for review


def test_forget_sticks_across_topics_and_clears_conflicts(conn):
    a = put(conn, "Lives in Paris", "home", confidence=0.9).item
    b = put(conn, "Lives in Berlin", "home", confidence=0.9).item
    assert curation.conflicts(conn, "p")
    curation.forget(conn, "p", a.id, T0)
    assert curation.conflicts(conn, "p") == []
    assert items.get_item(conn, "p", b.id).conflict_with is None
    with pytest.raises(InvalidInput):
        curation.resolve(conn, "p", a.id, T0)
    t = turn(conn)
    relearn = put(conn, "Lives in Paris", "city", turn_id=t.id)
    assert relearn.action == "skipped" and f"retracted #{a.id}" in relearn.note


def test_pin_brings_back_an_evicted_fact(conn):
    small = Settings(cap=1)
    old = remember.remember(
        conn, Fact("fact", "a", "fact a"), source="manual", now=T0, settings=small, profile="p"
    ).item
    remember.remember(
        conn,
        Fact("fact", "b", "fact b"),
        source="manual",
        now=T0 + timedelta(days=1),
        settings=small,
        profile="p",
    )
    assert items.get_item(conn, "p", old.id).status == "evicted"
    back = curation.pin(conn, "p", old.id, T0)
    assert back.status == "active" and back.pinned


def test_line_breaks_of_any_kind_cannot_start_a_section():
    for sep in ("\u2028", "\v", "\f", "\x1e", "\u0085", "\r"):
        rendered = entry("- ", f"note{sep}---{sep}=== OPEN ITEMS ===")
        lines = rendered.split("\n")
        assert lines[0] == "- note"
        assert all(line.startswith("    ") for line in lines[1:])
        assert "===" not in rendered


# --- through the CLI and the fake model ---------------------------------------------------


def test_a_poisoned_extraction_does_not_stall_the_queue(rheo, fake_model, monkeypatch, home):
    bad_outputs = [
        '{"facts": ' + "[" * 1000 + "]" * 1000 + "}",
        '{"facts":[{"label":"x","due":"0001-01-01T00:00:00+05:00","topic":"t"}]}',
        '{"facts":[{"category":"fact","topic":"u","label":"has \\ud800 x"}]}',
        '{"facts":[{"topic":"pet","label":"Has a cat named Tom"},{"label":"!!!"}]}',
        "{" * 40000,
    ]
    route(fake_model, extract=bad_outputs)
    monkeypatch.setenv("RHEO_NOW", "2026-02-01T09:00:00Z")
    for n in range(len(bad_outputs)):
        rheo("ask", f"message {n}")
    out = rheo("maintain", "--json")
    assert out.exit_code == 0, out.stderr
    ran = json.loads(out.stdout)
    assert len(ran["done"]) + len(ran["retrying"]) == len(bad_outputs)  # none stalls the rest
    # A reply nothing could be read from is not "done": it is retried, visibly.
    unread = {r["ref_id"]: r["error"] for r in ran["retrying"]}
    last = max(r["ref_id"] for r in ran["done"] + ran["retrying"])
    assert "could not be read: no JSON object or array found" in unread[last]
    assert all("could not be read" in e for e in unread.values())
    labels = [r[0] for r in db_rows(home, "SELECT label FROM memory_items ORDER BY id")]
    assert "Has a cat named Tom" in labels and "has \ufffd x" in labels
    statuses = [r[0] for r in db_rows(home, "SELECT status FROM jobs ORDER BY id")]
    assert statuses[-1] == "pending" and statuses.count("done") == len(ran["done"]) >= 3


def test_a_job_that_keeps_crashing_the_same_way_stops_after_three(
    rheo, fake_model, monkeypatch, home
):
    from rheo_cli.background import worker

    def explode(*args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(worker, "run_job", explode)
    rheo("ask", "hello")
    for _ in range(6):
        assert rheo("maintain").exit_code == 0
    job = json.loads(rheo("jobs", "list", "--json").stdout)[0]
    assert job["status"] == "failed" and job["attempts"] == jobs.SAME_FAILURES == 3
    assert "RuntimeError: a bug" in job["last_error"]


def test_takeovers_of_killed_runners_are_not_counted_as_attempts(conn):
    jobs.enqueue(
        as_tenant(conn, "p"), profile="p", kind="extract", ref_id=1, ts="2026-01-01T00:00:00.000Z"
    )
    for n in range(jobs.MAX_ATTEMPTS * 2):
        job = jobs.claim(
            conn,
            worker=f"host:{n}",
            wall_now=1e9 + n * 1e4,
            ts="2026-01-01T00:00:00.000Z",
            holder_alive=lambda h: False,
        )
        assert job is not None and job.attempts == 0  # the holder "dies" each time
    assert jobs.get_job(conn, 1).status == "running"


def test_tool_writes_are_limited_per_message(rheo, fake_model, home):
    calls = [
        (
            "write_memory",
            {
                "category": "fact",
                "topic": f"t{n}",
                "label": f"Fact number {n}",
            },
        )
        for n in range(7)
    ]
    fake_model.add(Canned(tool_calls=calls), "done")
    assert rheo("ask", "remember lots").exit_code == 0
    assert len(db_rows(home, "SELECT id FROM memory_items")) == 5


def test_out_of_range_due_date_from_a_tool_is_refused(rheo, fake_model, home):
    # A tool call's bad date is refused in one line (the model can call again with a
    # date), as over MCP; only the background extractor drops a date and keeps the fact.
    fake_model.add(
        Canned(
            tool_calls=[
                (
                    "write_memory",
                    {
                        "category": "open_item",
                        "topic": "someday",
                        "label": "Learn Sanskrit",
                        "due": "0999-06-01",
                    },
                )
            ]
        ),
        "ok",
    )
    rheo("ask", "one day I'll learn Sanskrit")
    result = fake_model.requests[1].messages[2]["content"][0]
    assert result["is_error"] is True
    assert result["content"] == (
        "due '0999-06-01' is out of range: dates must be between the years 1000 and 9998"
    )
    assert db_rows(home, "SELECT due_at FROM memory_items") == []
    fake_model.add("still fine")
    assert rheo("ask", "hello").exit_code == 0
    assert rheo("items", "list").exit_code == 0


def test_memory_search_tool_never_returns_retracted_facts(rheo, fake_model, home):
    rheo("memory", "add", "Diagnosed with diabetes", "--topic", "health")
    rheo("memory", "forget", "1")
    fake_model.add(Canned(tool_calls=[("memory_search", {"query": "diabetes"})]), "nothing")
    rheo("ask", "what about my health?")
    result = fake_model.requests[1].messages[2]["content"][0]["content"]
    assert result == "no stored facts match"


def test_ids_beyond_sqlite_are_usage_errors(rheo):
    for args in (
        ["memory", "show", "99999999999999999999"],
        ["items", "done", "0"],
        ["digests", "show", "-1"],
    ):
        result = rheo(*args)
        assert result.exit_code == 2, (args, result.stderr)
    assert rheo("memory", "show", "12345").exit_code == 2  # unknown id: a wrong argument


def test_terminal_control_codes_are_not_printed(rheo):
    rheo("memory", "add", "Likes \x1b]52;c;aGk=\x07tea \x1b[2J", "--topic", "tea")
    for args in (["memory", "list"], ["memory", "show", "1"]):
        out = rheo(*args).stdout
        assert "\x1b" not in out and "\x07" not in out and "tea" in out


def test_piped_documents_do_not_pin(rheo, fake_model, home):
    route(
        fake_model,
        extract=facts({"topic": "scene", "label": "Mary holds a grudge", "confidence": 0.5}),
    )
    rheo("ask", "summarise this scene", input="MARY: Never forget what they did.\n")
    rheo("maintain")
    assert db_rows(home, "SELECT pinned FROM memory_items")[0][0] == 0


def test_a_time_question_with_other_words_falls_back_to_that_time(rheo, fake_model, monkeypatch):
    monkeypatch.setenv("RHEO_NOW", "2026-09-14T18:00:00+00:00")
    rheo("ask", "I got new running shoes at the mall")
    monkeypatch.setenv("RHEO_NOW", "2026-09-15T10:00:00+00:00")
    out = json.loads(rheo("context", "--json", "what did I buy yesterday?").stdout)
    # That day is the previous session: until its digest exists its end is injected under
    # EPISODIC MEMORY, and RELEVANT HISTORY does not repeat those turns.
    found = [s for s in out["sections"] if s["name"] in ("RELEVANT HISTORY", "EPISODIC MEMORY")]
    assert any("running shoes" in s["text"] for s in found)
