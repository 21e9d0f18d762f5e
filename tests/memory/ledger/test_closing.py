"""Sessions closed by time alone get their digest job queued, on both stores.

Once, the queueing sent SQLite's ``PRAGMA busy_timeout`` to PostgreSQL; the error was
swallowed by the caller, so opening a PostgreSQL store never queued the digest of a session
closed by time (SQLite queued 3, PostgreSQL 0, same data). The wait is now the store's own
bounded wait (`db.write(..., wait_s=...)`), the same on both."""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta

import pytest
from conftest import as_tenant

from rheo_cli.memory.ledger import closing
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store.errors import Busy
from rheo_cli.memory.store.timeutil import to_stored

T10 = datetime.fromisoformat("2026-11-30T10:00:00+01:00")
NOW = T10 + timedelta(days=2, hours=3)


def three_days(conn) -> None:
    """Three sessions of ``default`` a day apart, and one of ``other``."""
    for day in range(3):
        ledger.append_turn(
            as_tenant(conn, "default"),
            profile="default",
            role="user",
            content=f"day {day}",
            now=T10 + timedelta(days=day),
            gap_s=7200,
        )
    ledger.append_turn(
        as_tenant(conn, "other"), profile="other", role="user", content="x", now=T10, gap_s=7200
    )
    as_tenant(conn, "default")


def test_queueing_closed_sessions_is_idempotent_and_reads_an_index(conn, backend):
    three_days(conn)
    queued = closing.queue_closed_sessions(conn, profile="default", now=NOW, gap_s=7200)
    assert queued == [1, 2, 3]
    assert closing.queue_closed_sessions(conn, profile="default", now=NOW, gap_s=7200) == []
    rows = conn.execute("SELECT profile, ref_id FROM jobs ORDER BY ref_id").fetchall()
    assert [tuple(r) for r in rows] == [("default", 1), ("default", 2), ("default", 3)]
    if backend == "sqlite":  # the plan of SQLite's query (PostgreSQL's, on four rows, scans)
        plan = " ".join(
            r[3]
            for r in conn.execute(
                "EXPLAIN QUERY PLAN " + closing.RECENT_UNDIGESTED,
                ("default", closing.RECENT_SESSIONS, to_stored(NOW)),
            )
        )
        assert re.search(r"SEARCH sessions USING INDEX sessions_\w+ \(profile=\?\)", plan), plan
        assert "SCAN sessions" not in plan


def test_a_held_write_lock_makes_it_give_up_quickly_with_busy(conn):
    """Queueing never holds up the command that triggered it: another writer's lock is
    waited for `closing.QUICK_WAIT_S`, then Busy (one rheo error, both stores), which its
    callers ignore; the next call queues them."""
    three_days(conn)
    holder = conn.store.open_again()
    held = holder.write()
    held.__enter__()
    try:
        started = time.monotonic()
        with pytest.raises(Busy):
            closing.queue_closed_sessions(conn, profile="default", now=NOW, gap_s=7200)
        assert time.monotonic() - started < 5  # the quick wait, not the store's 30 s
        assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0
    finally:
        held.__exit__(None, None, None)
        holder.close()
    queued = closing.queue_closed_sessions(conn, profile="default", now=NOW, gap_s=7200)
    assert queued == [1, 2, 3]
