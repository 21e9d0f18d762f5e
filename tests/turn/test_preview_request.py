"""The preview is the request: ``rheo context TEXT`` (and ``--json``) shows
byte for byte the system text, sections and message that ``rheo ask TEXT`` sends at the same
clock — compared here with the request the in-process fake model was asked."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

import pytest
from helpers import kind_of, route

T0 = datetime.fromisoformat("2026-03-02T09:00:00+01:00")

HISTORY = [
    (timedelta(days=-30), "The Nutrifax invoice for January is 1,200 EUR, due on the 15th."),
    (timedelta(days=-30, minutes=1), "Noted: Nutrifax January invoice, 1,200 EUR."),
    (timedelta(days=-12), "Nutrifax asked to split the invoice into two payments."),
    (timedelta(days=-12, minutes=1), "Two payments of 600 EUR then."),
    (timedelta(days=-2), "Remind me to check the Nutrifax invoice payment status."),
    (timedelta(days=-2, minutes=1), "I will remind you."),
    (timedelta(minutes=-20), "Morning. Let's go over the invoices."),
    (timedelta(minutes=-19), "Sure: Nutrifax and Acme are open."),
]


def build_store(rheo, fake_model, monkeypatch) -> None:
    """Turns over several sessions (ask with a scripted reply for each)."""
    replies = [t for i, (_, t) in enumerate(HISTORY) if i % 2]
    route(fake_model, chat=replies)
    for i in range(0, len(HISTORY), 2):
        delta, message = HISTORY[i]
        monkeypatch.setenv("RHEO_NOW", (T0 + delta).isoformat())
        assert rheo("ask", message).exit_code == 0


def many_matching_turns(home) -> None:
    """Sixty dated turns that share the message's words, more than retrieval reads at once."""
    from rheo_cli.memory.ledger import turns as ledger
    from rheo_cli.memory.store import db

    conn = db.open_store(home / "rheo.db")
    try:
        for n in range(60):
            when = T0 - timedelta(days=60 - n)
            for role, content in (
                ("user", f"Nutrifax invoice note {n}: payment {n * 10} EUR, reference NX-{n}."),
                ("assistant", f"Recorded the Nutrifax invoice payment {n}."),
            ):
                ledger.append_turn(
                    conn,
                    profile="default",
                    role=role,
                    content=content,
                    now=when,
                    gap_s=7200,
                    status="ok" if role == "assistant" else None,
                )
    finally:
        conn.close()


def test_context_matches_the_request_when_many_turns_match(rheo, fake_model, monkeypatch, home):
    many_matching_turns(home)
    monkeypatch.setenv("RHEO_NOW", T0.isoformat())
    message = "Nutrifax invoice payment reference?"
    preview = json.loads(rheo("context", message, "--json").stdout)
    route(fake_model, chat="NX-59.")
    assert rheo("ask", message).exit_code == 0
    sent = chat_bodies(fake_model)[-1]
    assert sent["messages"] == preview["messages"]


def chat_bodies(fake_model) -> list[dict]:
    """The chat requests the fake model was asked, as the preview's JSON shows them: system
    blocks (``text``), messages, tools (with their specs)."""
    return [
        {
            "system": [{"text": b.text} for b in r.system],
            "messages": r.messages,
            "tools": [{"name": t.name} for t in r.tools],
        }
        for r in fake_model.requests
        if kind_of(r) == "chat"
    ]


@pytest.mark.parametrize(
    ("later", "message"),
    [
        (timedelta(minutes=5), "What did we decide about the Nutrifax invoice payments?"),
        (timedelta(hours=6), "What did we decide about the Nutrifax invoice payments?"),
        (timedelta(days=9), "Nutrifax invoice: how much was January?"),
    ],
    ids=["same-session", "after-a-gap", "days-later"],
)
def test_context_json_is_the_request_ask_sends(rheo, fake_model, monkeypatch, later, message):
    build_store(rheo, fake_model, monkeypatch)
    monkeypatch.setenv("RHEO_NOW", (T0 + later).isoformat())
    shown = rheo("context", message, "--json")
    assert shown.exit_code == 0, shown.output
    preview = json.loads(shown.stdout)
    route(fake_model, chat="Here is where things stand.")
    assert rheo("ask", message).exit_code == 0
    sent = chat_bodies(fake_model)[-1]
    assert [b["text"] for b in sent["system"]] == [b["text"] for b in preview["system"]]
    assert sent["messages"] == preview["messages"]
    assert [t["name"] for t in sent["tools"]] == preview["tools"]
    # The sections shown are the ones inside that message.
    whole = "".join(part["text"] for part in sent["messages"][0]["content"])
    for section in preview["sections"]:
        assert section["text"] in whole
    assert any(s["name"] == "RELEVANT HISTORY" for s in preview["sections"])
    assert whole.endswith("\n---\n" + message)


def test_plain_context_prints_the_request_text(rheo, fake_model, monkeypatch):
    build_store(rheo, fake_model, monkeypatch)
    monkeypatch.setenv("RHEO_NOW", (T0 + timedelta(hours=6)).isoformat())
    message = "Where are we with Nutrifax?"
    shown = rheo("context", message)
    assert shown.exit_code == 0, shown.output
    route(fake_model, chat="ok")
    assert rheo("ask", message).exit_code == 0
    sent = chat_bodies(fake_model)[-1]
    for block in sent["system"]:
        assert block["text"] in shown.stdout
    for part in sent["messages"][0]["content"]:
        assert part["text"] in shown.stdout


def test_preview_leaves_the_store_as_it_was(rheo, fake_model, monkeypatch, home):
    from helpers import db_rows

    build_store(rheo, fake_model, monkeypatch)
    before = [tuple(r) for r in db_rows(home, "SELECT id, session_id, content FROM turns")]
    sessions = [tuple(r) for r in db_rows(home, "SELECT * FROM sessions")]
    monkeypatch.setenv("RHEO_NOW", (T0 + timedelta(hours=6)).isoformat())
    assert rheo("context", "a new session would start here").exit_code == 0
    assert [tuple(r) for r in db_rows(home, "SELECT id, session_id, content FROM turns")] == before
    assert [tuple(r) for r in db_rows(home, "SELECT * FROM sessions")] == sessions
    hits = db_rows(home, "SELECT rowid FROM turns_fts WHERE turns_fts MATCH 'session'")
    assert hits == []


def test_new_session_preview_matches_ask_new(rheo, fake_model, monkeypatch):
    build_store(rheo, fake_model, monkeypatch)
    monkeypatch.setenv("RHEO_NOW", (T0 + timedelta(minutes=5)).isoformat())
    message = "Fresh start: the Nutrifax invoice."
    preview = json.loads(rheo("--new", "context", message, "--json").stdout)
    assert preview["new_session"] is True and preview["session_id"] is None
    route(fake_model, chat="ok")
    assert rheo("--new", "ask", message).exit_code == 0
    sent = chat_bodies(fake_model)[-1]
    assert sent["messages"] == preview["messages"]
    assert "=== CURRENT SESSION ===" not in json.dumps(sent["messages"])


def test_context_without_a_message_still_shows_the_context(rheo, fake_model, monkeypatch):
    build_store(rheo, fake_model, monkeypatch)
    monkeypatch.setenv("RHEO_NOW", (T0 + timedelta(minutes=5)).isoformat())
    shown = rheo("context", "--json")
    assert shown.exit_code == 0, shown.output
    info = json.loads(shown.stdout)
    assert info["new_session"] is False and info["session_id"] is not None
    assert any(s["name"] == "CURRENT SESSION" for s in info["sections"])


def _memory_rows(home) -> list[list[tuple]]:
    from helpers import db_rows

    return [
        [tuple(r) for r in db_rows(home, f"SELECT * FROM {table} ORDER BY id")]
        for table in ("memory_items", "memory_events", "turns", "sessions")
    ]


@pytest.mark.parametrize(
    ("message", "shown", "hidden"),
    [
        ("Remember that my dentist is Dr. Okafor. Who is my dentist?", "Dr. Okafor", None),
        ("Please forget that I like green tea. What do I drink?", None, "I like green tea"),
    ],
    ids=["remember", "forget"],
)
def test_an_explicit_request_is_previewed_as_ask_honours_it_and_nothing_is_kept(
    rheo, fake_model, monkeypatch, home, message, shown, hidden
):
    build_store(rheo, fake_model, monkeypatch)
    monkeypatch.setenv("RHEO_NOW", (T0 + timedelta(minutes=1)).isoformat())
    assert rheo("ask", "Remember that I like green tea.").exit_code == 0
    monkeypatch.setenv("RHEO_NOW", (T0 + timedelta(minutes=5)).isoformat())
    before = _memory_rows(home)
    preview = json.loads(rheo("context", message, "--json").stdout)
    assert _memory_rows(home) == before  # the preview stays read-only
    memory = [s["text"] for s in preview["sections"] if s["name"] == "CURRENT MEMORY"]
    if shown:
        assert shown in memory[0]
    if hidden:
        assert all(hidden not in m for m in memory)
        assert hidden in json.dumps(before[0])  # it was there to forget
    route(fake_model, chat="Noted.")
    assert rheo("ask", message).exit_code == 0
    sent = chat_bodies(fake_model)[-1]
    assert [b["text"] for b in sent["system"]] == [b["text"] for b in preview["system"]]
    assert sent["messages"] == preview["messages"]
