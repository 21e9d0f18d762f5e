"""A purge on the SQLite file: its transaction, its search entries, then the file rewritten.

The engine's `purge` decides what is erased and erases it with plain SQL; this is what is
SQLite's in it. The append-only guards stand aside only while the purge's own transaction
holds a row in ``purge_grant`` (migration 9), removed again before it commits. The FTS5
indexes keep their own copy of the text (external content): the purged rows' entries are
deleted first (FTS5 needs the exact indexed values), and afterwards each index is merged
into one segment so no old segment keeps a term — or, when an index is damaged, rebuilt
from the rows left. Then the bytes: with ``secure_delete`` on, freed pages are zeroed; the
file is VACUUMed and the WAL checkpointed and truncated.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

from ..api import Compaction, Purging
from ..errors import DatabaseError, InvalidInput
from . import health
from .connection import SqliteConnection
from .migrations import CJK_GLOB

CHUNK = 500
"""Ids per statement."""


def _chunks(ids: Sequence[int]) -> Iterator[list[int]]:
    for start in range(0, len(ids), CHUNK):
        yield list(ids[start : start + CHUNK])


class SqlitePurging(Purging):
    """The SQLite side of one purge (see the module docstring)."""

    def __init__(self, conn: SqliteConnection) -> None:
        self.conn = conn
        self.indexed = True
        """False when a search index could not take the deletes: rebuilt at `settle`."""

    def forget(
        self, *, turns: Sequence[int], items: Sequence[int], digests: Sequence[int],
        knowledge_of: str | None,
    ) -> None:  # fmt: skip
        """Remove the rows' entries from the external-content FTS5 indexes (which need the
        exact indexed values to delete an entry), in a savepoint; on a damaged or missing
        index nothing is done and `settle` rebuilds every index from the rows left."""
        conn = self.conn
        try:
            with conn.store.write():
                for chunk in _chunks(turns):
                    marks = ",".join("?" * len(chunk))
                    conn.execute(
                        "INSERT INTO turns_fts(turns_fts, rowid, content, tenant) "
                        f"SELECT 'delete', id, content, tenant FROM turns WHERE id IN ({marks})",
                        chunk,
                    )
                    conn.execute(
                        "INSERT INTO turns_cjk(turns_cjk, rowid, content) "
                        f"SELECT 'delete', id, content FROM turns WHERE id IN ({marks}) "
                        f"AND content GLOB '{CJK_GLOB}'",
                        chunk,
                    )
                for chunk in _chunks(items):
                    marks = ",".join("?" * len(chunk))
                    conn.execute(
                        "INSERT INTO memory_items_fts(memory_items_fts, rowid, topic, label, "
                        "properties) SELECT 'delete', id, topic, label, properties "
                        f"FROM memory_items WHERE id IN ({marks})",
                        chunk,
                    )
                for chunk in _chunks(digests):
                    marks = ",".join("?" * len(chunk))
                    conn.execute(
                        "INSERT INTO digests_fts(digests_fts, rowid, narrative, decisions) "
                        "SELECT 'delete', id, narrative, decisions FROM digests "
                        f"WHERE id IN ({marks})",
                        chunk,
                    )
                if knowledge_of is not None:
                    conn.execute(
                        "INSERT INTO kb_chunks_fts(kb_chunks_fts, rowid, heading, content) "
                        "SELECT 'delete', id, heading, content FROM kb_chunks WHERE profile = ?",
                        (knowledge_of,),
                    )
        except health.DAMAGE as exc:
            if not health.may_be_an_index(exc):
                raise
            self.indexed = False

    def settle(self) -> None:
        """Merge each index into one segment: entries deleted by `forget` leave no old
        segment behind that still holds their terms. A damaged index is rebuilt from the
        rows left instead, which hold nothing purged either."""
        conn = self.conn
        if self.indexed:
            try:
                with conn.store.write():
                    for index in health.FTS_INDEXES:
                        conn.execute(f"INSERT INTO {index}({index}) VALUES ('optimize')")
            except health.DAMAGE as exc:
                if not health.may_be_an_index(exc):
                    raise
                self.indexed = False
        if not self.indexed:
            health.rebuild_indexes(conn)

    def guard_again(self) -> None:
        self.conn.execute("DELETE FROM purge_grant")

    def compact(self, tables: Sequence[str]) -> Compaction:
        """VACUUM the file (with ``secure_delete`` on) and checkpoint the WAL, truncating the
        -wal file. A VACUUM or checkpoint that another process's reading keeps from
        completing is reported (the freed pages are zeroed anyway), never raised."""
        conn = self.conn
        done = Compaction()
        with _secure_delete(conn):
            try:
                conn.execute("VACUUM")
                done.vacuumed = True
            except DatabaseError:
                pass  # another process is reading: freed pages are zeroed (secure_delete) anyway
            row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            done.wal_truncated = row is not None and int(row[0]) == 0
        if not done.vacuumed or not done.wal_truncated:
            done.note = (
                "another process holds the database, so the file could not be compacted "
                "yet; freed space is overwritten, and the next purge compacts it"
            )
        return done


@contextlib.contextmanager
def _secure_delete(conn: SqliteConnection) -> Iterator[None]:
    """``PRAGMA secure_delete`` on for the block (freed pages are overwritten with zeros),
    then as it was."""
    previous = int(conn.execute("PRAGMA secure_delete").fetchone()[0])
    conn.execute("PRAGMA secure_delete = ON")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA secure_delete = {previous}")


@contextlib.contextmanager
def purging(conn: SqliteConnection, ref: str) -> Iterator[SqlitePurging]:
    """The purge's write transaction (``secure_delete`` on), with the guards' grant held
    (``ref`` recorded with it). Raises InvalidInput inside another transaction."""
    if conn.in_transaction:
        raise InvalidInput("purge runs in its own transaction")
    with _secure_delete(conn), conn.store.write():
        conn.execute("INSERT INTO purge_grant(on_, reason) VALUES (1, ?)", (ref,))
        yield SqlitePurging(conn)
