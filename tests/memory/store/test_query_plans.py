"""No full table scans on the turn path: every query rheo runs to store a turn and assemble
the context is checked with EXPLAIN QUERY PLAN (issue: a million turns, milliseconds a turn)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from rheo_cli.memory.context import assemble as context
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.ledger import digests
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store import db
from rheo_cli.memory.store.settings import Settings

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
S = Settings()

# Scans that are bounded on purpose: the trigram fallback for one- or two-character CJK
# words reads at most the newest 20,000 turns (see relevant._trigram_hits).
BOUNDED = ("ORDER BY id DESC LIMIT 20000",)


def full_scans(conn, sql, args):
    """Plan lines that read a whole real table (virtual FTS tables are index lookups)."""
    plan = conn.execute("EXPLAIN QUERY PLAN " + sql, args).fetchall()
    bad = []
    for row in plan:
        detail = row[3]
        if re.match(r"SCAN (\w+)(?! VIRTUAL TABLE)", detail) and not re.search(
            r"USING (COVERING )?INDEX|VIRTUAL TABLE", detail
        ):
            table = detail.split()[1].removeprefix("main.")
            if not table.startswith(
                ("turns_fts", "turns_cjk", "memory_items_fts", "digests_fts", "kb_chunks_fts")
            ):
                bad.append(detail)
    return bad


def test_turn_path_has_no_full_scans(tmp_path):
    conn = db.open_store(tmp_path / "p.db")
    for n in range(40):
        t = ledger.append_turn(
            conn,
            profile="default",
            role="user",
            gap_s=S.gap_s,
            content=f"talk {n} about the Nutrifax invoice and 東京タワー",
            now=T0 + timedelta(hours=3 * n),
        ).turn
        if n % 5 == 0:
            digests.store_digest(
                conn,
                profile="default",
                session_id=t.session_id,
                narrative=f"session {n} on invoices",
                facts=[],
                procedures=[],
                decisions=[],
                source_turn_ids=[t.id],
                model="m",
                created_at=t.ts,
            )
            remember(
                conn,
                Fact("fact", f"topic {n}", f"Invoice fact {n}"),
                source="tool",
                now=T0,
                settings=S,
                source_turn_id=t.id,
            )
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    now = T0 + timedelta(hours=3 * 40)
    for message in (
        "what about the Nutrifax invoice last month?",
        "東京",
        "東京タワーはどこ",
        "what did we talk about last week?",
        "thanks",
    ):
        ledger.append_turn(
            conn, profile="default", role="user", content=message, now=now, gap_s=S.gap_s
        )
        context.assemble(conn, profile="default", message=message, now=now, settings=S)
    ledger.search_turns(conn, "default", "invoice")
    conn.set_trace_callback(None)
    selects = {s for s in statements if s.lstrip().upper().startswith("SELECT")}
    assert len(selects) > 10
    problems = {}
    for sql in selects:
        if any(marker in sql for marker in BOUNDED):
            continue
        # The trace shows statements with their values bound; EXPLAIN them as they ran.
        bad = full_scans(conn, sql, ())
        if bad:
            problems[sql[:120]] = bad
    assert problems == {}


def test_the_check_catches_a_full_scan(tmp_path):
    conn = db.open_store(tmp_path / "s.db")
    assert full_scans(conn, "SELECT * FROM turns WHERE content LIKE '%x%'", ())
    assert not full_scans(conn, "SELECT * FROM turns WHERE profile = 'p' ORDER BY id DESC", ())
