"""The bulk write path gives the same ledger as one append at a time, only faster."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from conftest import as_tenant
from hypothesis import given, settings
from hypothesis import strategies as st

from rheo_cli.memory import bulk
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store import db
from rheo_cli.memory.store.errors import Integrity, InvalidInput

T0 = datetime(2025, 1, 1, tzinfo=UTC)
TENANT = "p"
"""The profile these tests write (the PostgreSQL connection's tenant)."""


def rows_from(gaps):
    when = T0
    out = []
    for n, gap in enumerate(gaps):
        when += timedelta(seconds=gap)
        role = "user" if n % 2 == 0 else "assistant"
        out.append(
            bulk.TurnIn(
                role,
                f"turn {n} about tomatoes 東京タワー" * (n % 3 == 0),
                when,
                status="ok" if role == "assistant" else None,
            )
        )
    return out


@settings(max_examples=25, deadline=None)
@given(
    gaps=st.lists(st.sampled_from([1, 60, 3600, 7199, 7200, 7201, 86400]), min_size=1, max_size=60),
    batch=st.sampled_from([1, 3, 7, 20_000]),
)
def test_bulk_matches_single_appends(tmp_path_factory, gaps, batch):
    folder = tmp_path_factory.mktemp("b")
    one = db.open_store(folder / "one.db")
    many = db.open_store(folder / "many.db")
    rows = rows_from(gaps)
    for row in rows:
        ledger.append_turn(
            one,
            profile="p",
            role=row.role,
            content=row.content,
            now=row.when,
            gap_s=7200,
            status=row.status,
        )
    old = bulk.BATCH
    bulk.BATCH = batch
    try:
        done = bulk.import_turns(many, "p", rows, gap_s=7200)
    finally:
        bulk.BATCH = old
    query = "SELECT id, session_id, role, content, ts, status FROM turns ORDER BY id"
    assert many.execute(query).fetchall() == one.execute(query).fetchall()
    sessions = "SELECT id, started_at, last_turn_at, turns FROM sessions ORDER BY id"
    assert many.execute(sessions).fetchall() == one.execute(sessions).fetchall()
    assert done.turns == len(rows) and done.first_id == 1 and done.last_id == len(rows)
    for text in ("tomato", "turn"):
        assert ledger.search_turns(many, "p", text, limit=100) and [
            t.id for t, _ in ledger.search_turns(many, "p", text, limit=100)
        ] == [t.id for t, _ in ledger.search_turns(one, "p", text, limit=100)]
    cjk = "SELECT rowid FROM turns_cjk WHERE turns_cjk MATCH '\"東京タ\"' ORDER BY rowid"
    assert many.execute(cjk).fetchall() == one.execute(cjk).fetchall()
    assert many.execute("SELECT count(*) FROM fts_deferred").fetchone()[0] == 0


def test_single_appends_after_a_bulk_import_are_indexed(conn):
    bulk.import_turns(conn, "p", rows_from([60, 60]), gap_s=7200)
    ledger.append_turn(
        conn,
        profile="p",
        role="user",
        content="later quince",
        gap_s=7200,
        now=T0 + timedelta(minutes=5),
    )
    assert [t.content for t, _ in ledger.search_turns(conn, "p", "quince")] == ["later quince"]


def test_bad_row_writes_nothing_of_its_batch(conn):
    rows = rows_from([60, 60]) + [bulk.TurnIn("system", "x", T0 + timedelta(hours=1))]
    with pytest.raises(InvalidInput):
        bulk.import_turns(conn, "p", rows, gap_s=7200)
    assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 0
    if not hasattr(conn, "set_tenant"):  # SQLite's deferred-indexing flag is cleared too
        assert conn.execute("SELECT count(*) FROM fts_deferred").fetchone()[0] == 0


def test_imported_items_keep_ownership_and_history(conn):
    bulk.import_turns(as_tenant(conn, "p"), "p", rows_from([60]), gap_s=7200)
    item = bulk.ItemIn(
        "fact",
        "garden",
        "Grows tomatoes",
        T0,
        source_turn_id=1,
        status="superseded",
        events=(("superseded", T0, "replaced"),),
    )
    assert bulk.import_items(conn, "p", [item]) == 1
    kinds = [r[0] for r in conn.execute("SELECT kind FROM memory_events ORDER BY id")]
    assert kinds == ["created", "superseded"]
    with pytest.raises(InvalidInput, match="profile of its source turn"):
        bulk.import_items(as_tenant(conn, "q"), "q", [item])
    with pytest.raises(Integrity):
        as_tenant(conn, "p").execute("DELETE FROM memory_events")
