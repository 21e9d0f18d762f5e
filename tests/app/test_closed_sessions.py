"""Opening the store queues the digest of every session closed by time, on both stores.

As it was once seen: the same history, SQLite queued 3 digest jobs when rheo opened the
store and PostgreSQL 0 (the queueing sent SQLite's ``PRAGMA busy_timeout``, whose error the
caller swallows); only ``rheo maintain`` and ``doctor --repair`` found them later."""

from __future__ import annotations

from datetime import datetime, timedelta

from rheo_cli.app import app as app_mod
from rheo_cli.memory.ledger import turns as ledger

T10 = datetime.fromisoformat("2026-11-30T10:00:00+01:00")


def test_the_app_queues_the_sessions_closed_by_time_on_both_stores(home_store, monkeypatch):
    monkeypatch.setenv("RHEO_NOW", T10.isoformat())
    with app_mod.build() as app:
        for day in range(3):
            ledger.append_turn(app.conn, profile="default", role="user", content=f"day {day}",
                               now=T10 + timedelta(days=day), gap_s=app.settings.gap_s)  # fmt: skip
    monkeypatch.setenv("RHEO_NOW", (T10 + timedelta(days=2, hours=3)).isoformat())
    with app_mod.build() as app:
        assert app.store.kind == home_store
        assert app.queue_closed_sessions() == [1, 2, 3]
        assert app.queue_closed_sessions() == []
        rows = app.conn.execute("SELECT kind, ref_id FROM jobs ORDER BY ref_id").fetchall()
        assert [tuple(r) for r in rows] == [("digest", 1), ("digest", 2), ("digest", 3)]
