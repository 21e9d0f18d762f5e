"""`purge` on the PostgreSQL store: the same erase as `purge.purge`, in PostgreSQL's terms.

One transaction removes the target's rows of the connection's tenant — turns, sessions left
empty, memory items learnt from them with their history, digests, jobs, and for a whole
profile its knowledge base too — with their search entries (the ``tsvector`` columns and GIN
and trigram index entries go with the rows), and writes a tombstone in ``purges``. The
append-only guards stand aside only because this transaction sets ``rheo.purge`` to the
tenant (transaction-local, see `pg_schema.M004_PURGE`); every statement also names the
profile, so even a connection that row-level security does not bind erases nothing of
another tenant.

Then the bytes: a DELETE leaves the row versions in the table and index files, and a plain
VACUUM only marks their space reusable (the text stays readable in the file). So the touched
tables are rewritten with ``VACUUM FULL`` (new files, indexes rebuilt, the old files
removed), with the owner's rights (`pg_schema.owner_rights`). It takes each table's exclusive
lock in turn, after waiting up to `SNAPSHOT_WAIT_S` for transactions older than the purge to
end (a rewrite must keep the row versions such a snapshot may still read). When another
session holds a table longer than `LOCK_TIMEOUT_S`, or an older snapshot is still open, the
result names the tables not rewritten (``VACUUM FULL`` of them, by the owner, finishes the
job). Sessions of roles the connecting role may not see in ``pg_stat_activity`` cannot be
waited for. What PostgreSQL keeps outside the tables is beyond rheo: the write-ahead log
until its segments are recycled, archived WAL, base backups and replicas.
"""

from __future__ import annotations

import sqlite3
import time
from datetime import datetime
from typing import Any, cast

from . import purge_undo
from .purge import Purged, Target, Work, prepare, requeue, tombstone
from .store import crash
from .store.db import write
from .store.errors import InvalidInput
from .store.timeutil import to_stored

LOCK_TIMEOUT_S = 10
"""How long (seconds) the compaction waits for each table's lock before giving up on it."""

SNAPSHOT_WAIT_S = 10
"""How long (seconds) the compaction first waits for transactions older than the purge (in
any session of the server: they hold back what VACUUM may remove) to end."""


def _touched(target: Target, counts: dict[str, int]) -> list[str]:
    """The tables whose files hold erased rows (or row versions whose links were cleared)."""
    tables = [name for name in ("turns", "digests", "jobs", "kb_chunks", "kb_documents")
              if counts.get(name)]  # fmt: skip
    if target.items or target.turns:
        tables += ["memory_items", "memory_events"]
    if counts.get("sessions") or target.sessions_touched:
        tables.append("sessions")
    if {"turns", "digests", "kb_chunks", "memory_items"} & set(tables):
        tables.append("postings")  # the words of what went (search, `pg_schema` m008)
    return tables


def _erase(conn: sqlite3.Connection, target: Target, work: Work, ts: str) -> dict[str, int]:
    """Take back what the target did to the items that stay (`purge_undo`), then delete the
    target's rows (every statement limited to its profile); rows erased per kind."""
    profile = target.profile
    counts = purge_undo.apply(conn, work.undo, profile=profile, ts=ts)

    def run(sql: str, ids: list[int], key: str | None = None) -> None:
        if not ids:
            return
        n = conn.execute(sql, (profile, ids)).rowcount
        if key:
            counts[key] = counts.get(key, 0) + max(n, 0)

    items, turns = target.items, target.turns
    # Links from rows that stay to rows that go become NULL (ids only, never content).
    run("UPDATE memory_events SET related_item_id = NULL "
        "WHERE profile = ? AND related_item_id = ANY(?)", items)  # fmt: skip
    run("UPDATE memory_events SET source_turn_id = NULL "
        "WHERE profile = ? AND source_turn_id = ANY(?)", turns)  # fmt: skip
    run("UPDATE memory_items SET superseded_by = NULL "
        "WHERE profile = ? AND superseded_by = ANY(?)", items)  # fmt: skip
    run("UPDATE memory_items SET conflict_with = NULL "
        "WHERE profile = ? AND conflict_with = ANY(?)", items)  # fmt: skip
    run("DELETE FROM memory_events WHERE profile = ? AND item_id = ANY(?)", items,
        "memory_events")  # fmt: skip
    run("DELETE FROM memory_items WHERE profile = ? AND id = ANY(?)", items, "memory_items")
    run("DELETE FROM digests WHERE profile = ? AND id = ANY(?)", target.digests, "digests")
    run("DELETE FROM jobs WHERE profile = ? AND kind = 'extract' AND ref_id = ANY(?)",
        [*turns, *work.readers], "jobs")  # fmt: skip
    # The digest of a session that keeps some turns is written again from what is left.
    run("DELETE FROM jobs WHERE profile = ? AND kind = 'digest' AND ref_id = ANY(?)",
        target.sessions_touched, "jobs")  # fmt: skip
    run("DELETE FROM turns WHERE profile = ? AND id = ANY(?)", turns, "turns")
    run("DELETE FROM sessions WHERE profile = ? AND id = ANY(?)", target.sessions_emptied,
        "sessions")  # fmt: skip
    requeue(conn, profile, work, ts)
    for session_id in sorted(set(target.sessions_touched) - set(target.sessions_emptied)):
        conn.execute(
            "UPDATE sessions SET turns = (SELECT count(*) FROM turns WHERE session_id = ? "
            "AND profile = ?), last_turn_at = coalesce((SELECT max(ts) FROM turns "
            "WHERE session_id = ? AND profile = ?), last_turn_at), started_at = "
            "coalesce((SELECT min(ts) FROM turns WHERE session_id = ? AND profile = ?), "
            "started_at) WHERE id = ? AND profile = ?",
            (session_id, profile) * 4,
        )
    if target.what == "profile":
        for table in ("jobs", "kb_chunks", "kb_documents"):
            n = conn.execute(f"DELETE FROM {table} WHERE profile = ?", (profile,)).rowcount
            counts[table] = counts.get(table, 0) + max(n, 0)
    return counts


def _older_snapshots(conn: sqlite3.Connection, xid: str) -> int:
    """Other sessions whose snapshot predates transaction ``xid``: a rewrite must keep the
    row versions they may still read (0 when the role may not see other sessions)."""
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
        "AND backend_xmin IS NOT NULL AND age(backend_xmin) >= age(?::xid)",
        (xid,),
    ).fetchone()
    return int(row[0])


def compact(conn: Any, tables: list[str]) -> tuple[list[str], list[str]]:
    """``VACUUM FULL`` each of ``tables`` with the owner's rights, waiting at most
    `LOCK_TIMEOUT_S` for each lock; returns ``(rewritten, skipped)``. A table whose lock
    cannot be had in time, or that the connecting role may not vacuum, is skipped, never
    raised."""
    from .store.pg_schema import owner_rights

    raw = conn.raw
    notices: list[str] = []

    def collect(diag: Any) -> None:
        notices.append(str(diag.message_primary or ""))

    done: list[str] = []
    skipped: list[str] = []
    raw.add_notice_handler(collect)
    try:
        with owner_rights(conn):
            previous = raw.execute("SHOW lock_timeout").fetchone()[0]
            raw.execute(f"SET lock_timeout = '{int(LOCK_TIMEOUT_S)}s'")
            try:
                for table in dict.fromkeys(tables):
                    notices.clear()
                    try:
                        raw.execute(f"VACUUM (FULL, ANALYZE) {table}")
                    except Exception:  # noqa: BLE001 - lock timeout or no right: reported
                        skipped.append(table)
                        continue
                    if any("skipping" in n for n in notices):
                        skipped.append(table)
                    else:
                        done.append(table)
            finally:
                raw.execute("SELECT set_config('lock_timeout', %s, false)", (previous,))
    finally:
        raw.remove_notice_handler(collect)
    return done, skipped


def purge(conn: sqlite3.Connection, target: Target, *, now: datetime) -> Purged:
    """Erase ``target`` (from `purge.plan`) on the PostgreSQL store in one transaction, leave
    a tombstone, then rewrite the touched tables (see the module docstring). ``now`` dates the
    tombstone. ``vacuumed`` says every touched table was rewritten after the commit with no
    older snapshot open elsewhere, else ``not_rewritten`` names the tables whose files may
    still hold the text; ``wal_truncated`` is always False (the write-ahead log is the
    server's).

    The connection must be bound to ``target.profile`` and not inside a transaction. Raises
    InvalidInput otherwise, sqlite3.Error if the database refuses the erase (nothing is erased
    then); a compaction that cannot complete is reported in the result, not raised.
    """
    if conn.in_transaction:
        raise InvalidInput("purge runs in its own transaction")
    if getattr(conn, "tenant", None) != target.profile:
        raise InvalidInput(f"this connection is not bound to profile {target.profile!r}")
    ref = "profile" if target.what == "profile" else f"{target.what} #{target.ref_id}"
    with write(conn):
        conn.execute("SELECT set_config('rheo.purge', ?, true)", (target.profile,))
        xid = str(conn.execute("SELECT pg_current_xact_id()::text").fetchone()[0])
        work = prepare(conn, target)
        counts = _erase(conn, target, work, to_stored(now))
        crash.reach("purge.erase")
        conn.execute("SELECT set_config('rheo.purge', '', true)")
        tombstone(conn, target, counts, work.keys, now)
    done = Purged(target.what, ref, counts)
    crash.reach("purge.vacuum")
    from .store.pg_schema import owner_rights

    deadline = time.monotonic() + SNAPSHOT_WAIT_S
    with owner_rights(cast(Any, conn)):  # other roles' sessions: visible to the owner only
        while (waiting := _older_snapshots(conn, xid)) and time.monotonic() < deadline:
            time.sleep(0.1)
    tables = _touched(target, counts)
    _, skipped = compact(conn, tables)
    done.vacuumed = not skipped and waiting == 0
    done.not_rewritten = tables if waiting else skipped
    return done
