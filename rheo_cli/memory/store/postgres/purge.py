"""A purge on the PostgreSQL store: its transaction, then the tables rewritten.

The engine's `purge` decides what is erased and erases it with plain SQL (every statement
naming the profile, so even a connection that row-level security does not bind erases
nothing of another tenant); this is what is PostgreSQL's in it. The append-only guards stand
aside only because the purge's transaction sets ``rheo.purge`` to the tenant
(transaction-local, see `schema.M004_PURGE`), cleared again before the tombstone is written.
The search entries (the ``tsvector`` columns and GIN and trigram index entries) go with the
rows.

Then the bytes: a DELETE leaves the row versions in the table and index files, and a plain
VACUUM only marks their space reusable (the text stays readable in the file). So the touched
tables are rewritten with ``VACUUM FULL`` (new files, indexes rebuilt, the old files
removed), with the owner's rights (`schema.owner_rights`). It takes each table's exclusive
lock in turn, after waiting up to `SNAPSHOT_WAIT_S` for transactions older than the purge to
end (a rewrite must keep the row versions such a snapshot may still read). When another
session holds a table longer than `LOCK_TIMEOUT_S`, or an older snapshot is still open, the
result names the tables not rewritten (``VACUUM FULL`` of them, by the owner, finishes the
job). Sessions of roles the connecting role may not see in ``pg_stat_activity`` cannot be
waited for. What PostgreSQL keeps outside the tables is beyond rheo: the write-ahead log
until its segments are recycled, archived WAL, base backups and replicas.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import Any

from ..api import Compaction, Purging
from ..errors import InvalidInput
from .connection import PgConnection
from .schema import owner_rights

LOCK_TIMEOUT_S = 10
"""How long (seconds) the compaction waits for each table's lock before giving up on it."""

SNAPSHOT_WAIT_S = 10
"""How long (seconds) the compaction first waits for transactions older than the purge (in
any session of the server: they hold back what VACUUM may remove) to end."""


def _older_snapshots(conn: PgConnection, xid: str) -> int:
    """Other sessions whose snapshot predates transaction ``xid``: a rewrite must keep the
    row versions they may still read (0 when the role may not see other sessions)."""
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
        "AND backend_xmin IS NOT NULL AND age(backend_xmin) >= age(?::xid)",
        (xid,),
    ).fetchone()
    return int(row[0])


SEARCHABLE = ("turns", "digests", "kb_chunks", "memory_items")
"""The tables whose rows' words are kept in ``postings``."""


def compact(conn: PgConnection, tables: Sequence[str]) -> tuple[list[str], list[str]]:
    """``VACUUM FULL`` each of ``tables`` with the owner's rights, waiting at most
    `LOCK_TIMEOUT_S` for each lock; returns ``(rewritten, skipped)``. A table whose lock
    cannot be had in time, or that the connecting role may not vacuum, is skipped, never
    raised."""
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


class PgPurging(Purging):
    """The PostgreSQL side of one purge (see the module docstring)."""

    def __init__(self, conn: PgConnection, xid: str) -> None:
        self.conn = conn
        self.xid = xid
        """The purge's transaction: snapshots older than it hold back the rewrite."""

    def guard_again(self) -> None:
        self.conn.execute("SELECT set_config('rheo.purge', '', true)")

    def compact(self, tables: Sequence[str]) -> Compaction:
        """Wait up to `SNAPSHOT_WAIT_S` for older snapshots to end, then ``VACUUM FULL``
        each of ``tables``: ``vacuumed`` when every one was rewritten with no older snapshot
        open elsewhere, else ``not_rewritten`` names the tables whose files may still hold
        the text; ``wal_truncated`` is always False (the write-ahead log is the server's).
        The search postings of a searchable table's erased rows (`schema` m008) are rewritten
        with it."""
        conn = self.conn
        if set(SEARCHABLE) & set(tables):
            tables = [*tables, "postings"]  # the words of what went
        deadline = time.monotonic() + SNAPSHOT_WAIT_S
        with owner_rights(conn):  # other roles' sessions: visible to the owner only
            while (waiting := _older_snapshots(conn, self.xid)) and time.monotonic() < deadline:
                time.sleep(0.1)
        _, skipped = compact(conn, tables)
        done = Compaction(not_rewritten=list(tables) if waiting else skipped)
        done.vacuumed = not skipped and waiting == 0
        if not done.vacuumed:
            named = ", ".join(done.not_rewritten or [])
            done.note = (
                f"another session was using {named or 'the tables'} (or held an older "
                "transaction), so their files may still hold the text until the tables' owner "
                f"runs VACUUM FULL on {named or 'them'}"
            )
        return done


@contextlib.contextmanager
def purging(conn: PgConnection, profile: str) -> Iterator[PgPurging]:
    """The purge's write transaction, with ``rheo.purge`` set to ``profile`` (the tenant the
    connection is bound to). Raises InvalidInput inside another transaction or for another
    tenant."""
    if conn.in_transaction:
        raise InvalidInput("purge runs in its own transaction")
    if conn.tenant != profile:
        raise InvalidInput(f"this connection is not bound to profile {profile!r}")
    with conn.store.write():
        conn.execute("SELECT set_config('rheo.purge', ?, true)", (profile,))
        xid = str(conn.execute("SELECT pg_current_xact_id()::text").fetchone()[0])
        yield PgPurging(conn, xid)
