"""What an import must not let in, and what it must keep right, on both stores: a session
exported twice keeps its counters, a profile name no command accepts is refused, a NUL
character PostgreSQL cannot hold is refused with its line — and nothing is half imported."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from rheo_cli.memory.archive import exchange
from rheo_cli.memory.ledger import counters, sessions
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store import db
from rheo_cli.memory.store.errors import InvalidInput
from rheo_cli.memory.store.settings import Settings

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
S = Settings()


def say(conn, content, when, role="user"):
    return ledger.append_turn(
        conn, profile="default", role=role, content=content, now=when, gap_s=S.gap_s,
        status=None if role == "user" else "ok",
    ).turn  # fmt: skip


def exported(conn) -> list[dict[str, Any]]:
    with exchange.snapshot(conn):
        return list(exchange.export_records(conn, ["default"]))


def lines(records: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    return list(enumerate(records, start=1))


@pytest.fixture
def source(tmp_path):
    src = db.open_store(tmp_path / "source.db")
    yield src
    src.close()


def test_a_session_exported_twice_keeps_its_counters_when_imported_twice(conn, source):
    say(source, "first q", T0)
    say(source, "first a", T0 + timedelta(seconds=5), role="assistant")
    t1 = exported(source)
    say(source, "second q", T0 + timedelta(minutes=3))
    last = say(source, "second a", T0 + timedelta(minutes=3, seconds=5), role="assistant")
    t2 = exported(source)

    exchange.import_records(conn, lines(t1))
    counts = exchange.import_records(conn, lines(t2))

    assert counts.added["turn"] == 2 and counts.added["session"] == 0
    (session,) = sessions.list_sessions(conn, "default")
    assert session.turns == 4
    assert session.last_turn_at == last.ts
    assert session.started_at == "2026-05-01T09:00:00.000Z"
    assert ledger.count_turns(conn, "default") == 4
    assert counters.stale_sessions(conn, "default") == []


def test_counters_that_disagree_with_the_turns_are_found_and_recounted(conn):
    first = say(conn, "hello", T0)
    say(conn, "again", T0 + timedelta(minutes=1))
    with db.write(conn):
        conn.execute(
            "UPDATE sessions SET turns = 7, last_turn_at = ? WHERE id = ?",
            ("2026-05-01T09:00:00.000Z", first.session_id),
        )
    assert counters.stale_sessions(conn, "default") == [first.session_id]
    assert counters.repair(conn, "default") == [first.session_id]
    session = sessions.get_session(conn, "default", first.session_id)
    assert (session.turns, session.last_turn_at) == (2, "2026-05-01T09:01:00.000Z")
    assert counters.stale_sessions(conn, "default") == []


@pytest.mark.parametrize(
    "name", ["x y", "../../etc", "a" * 200, 'quo"te', "100%", "evil\u202etxt", "", ".hidden"]
)
def test_an_import_naming_a_profile_no_command_accepts_is_refused_whole(conn, source, name):
    say(source, "kept elsewhere", T0)
    records = exported(source)
    records[-1] = {**records[-1], "profile": name}  # the last record: the rest is valid
    line = len(records)
    with pytest.raises(InvalidInput, match=rf"^line {line}: ") as caught:
        exchange.import_records(conn, lines(records))
    assert "profile" in str(caught.value) and "\n" not in str(caught.value)
    assert ledger.count_turns(conn, "default") == 0
    assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 0


def test_a_knowledge_record_naming_a_bad_profile_is_refused(conn):
    records = [
        {"type": "header", "format": "rheo-export", "version": 2, "profiles": ["a b"]},
        {"type": "kb_document", "key": "k1", "profile": "a b", "source": "/x.md",
         "title": "x", "sha256": "0" * 64, "version": 1, "status": "active",
         "added_at": "2026-05-01T09:00:00.000Z", "chars": 1},
    ]  # fmt: skip
    with pytest.raises(InvalidInput, match=r"^line 2: invalid profile name 'a b'"):
        exchange.import_records(conn, lines(records))


def test_a_nul_character_is_refused_on_postgresql_with_its_line(conn, source, backend):
    say(source, "clean", T0)
    say(source, "bad\x00byte", T0 + timedelta(minutes=1))
    records = exported(source)
    line = next(n for n, r in lines(records) if "\x00" in str(r.get("content")))
    if backend == "sqlite":  # SQLite's text holds it: the round trip is exact
        assert exchange.import_records(conn, lines(records)).added["turn"] == 2
        return
    with pytest.raises(InvalidInput, match=rf"^line {line}: the turn record holds a NUL"):
        exchange.import_records(conn, lines(records))
    assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
