"""A forked session (``rheo ask --fork N``): its context starts with its origin's turns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rheo_cli.memory.context import assemble as context
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store.settings import Settings

T0 = datetime(2026, 6, 16, 21, 0, tzinfo=UTC)
S = Settings()


def say(conn, content, when, role="user", **kw):
    if role == "assistant":
        kw.setdefault("status", "ok")
    return ledger.append_turn(
        conn, profile="default", role=role, content=content, now=when, gap_s=S.gap_s, **kw
    ).turn


def origin_and_other(conn):
    """Session A (the cat), then session B (taxes) a day later; A's id and B's id."""
    a = say(conn, "my cat is called Mia", T0)
    say(conn, "Nice name.", T0 + timedelta(seconds=5), "assistant", session_id=a.session_id)
    b = say(conn, "about my taxes", T0 + timedelta(days=1))
    say(
        conn,
        "Let us look.",
        T0 + timedelta(days=1, seconds=5),
        "assistant",
        session_id=b.session_id,
    )
    return a.session_id, b.session_id


def test_a_fork_starts_with_its_origins_turns(conn):
    a, b = origin_and_other(conn)
    now = T0 + timedelta(days=2)
    fork = say(conn, "what is her name?", now, new_session=True, meta={ledger.FORK_OF: a})
    assert fork.session_id not in (a, b)
    assert ledger.fork_origin(conn, "default", fork.session_id) == a
    assert ledger.fork_origin(conn, "default", b) is None
    ctx = context.assemble(
        conn,
        profile="default",
        message=fork.content,
        now=now,
        settings=S,
        session_id=fork.session_id,
        before_turn_id=fork.id,
    )
    lines = ctx.section("CURRENT SESSION").lines
    assert [ln.text.split(": ", 1)[1] for ln in lines] == ["my cat is called Mia", "Nice name."]
    assert "forked from" in lines[0].why
    assert "taxes" not in ctx.section("CURRENT SESSION").render()


def test_the_forks_own_turns_come_after_and_fill_the_window_first(conn):
    a, _ = origin_and_other(conn)
    now = T0 + timedelta(days=2)
    fork = say(conn, "turn 0", now, new_session=True, meta={ledger.FORK_OF: a})
    for n in range(1, 11):
        say(conn, f"turn {n}", now + timedelta(seconds=n), session_id=fork.session_id)
    ctx = context.assemble(
        conn, profile="default", message="next", now=now + timedelta(minutes=1), settings=S
    )
    texts = [ln.text.split(": ", 1)[1] for ln in ctx.section("CURRENT SESSION").lines]
    assert texts == ["Nice name.", *(f"turn {n}" for n in range(11))]


def test_forking_the_latest_session_does_not_repeat_its_end(conn):
    _, b = origin_and_other(conn)
    now = T0 + timedelta(days=2)
    fork = say(conn, "and the receipts?", now, new_session=True, meta={ledger.FORK_OF: b})
    ctx = context.assemble(
        conn,
        profile="default",
        message=fork.content,
        now=now,
        settings=S,
        session_id=fork.session_id,
        before_turn_id=fork.id,
    )
    assert "End of the previous session" not in ctx.text()
    assert "about my taxes" in ctx.section("CURRENT SESSION").render()
