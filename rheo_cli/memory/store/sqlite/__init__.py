"""rheo's store in one SQLite file: `SqliteStore`, the embedded default.

One file holds every profile (queries filter by profile); FTS5 indexes kept by triggers
(``sqlite/search.py`` holds their queries); the write lock is ``BEGIN IMMEDIATE`` with a busy
timeout; a damaged search index is rebuilt from its table by the first write it would refuse
(`health`). Standard library only.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from ..api import Cursor, Health, Store
from ..errors import DatabaseError
from . import doctor, health, purge, search
from .backup import backup as _backup
from .connection import SqliteConnection, checkpoint_lost_wal, connect, wal_identity
from .migrations import CJK_GLOB

__all__ = ["SqliteStore"]

T = TypeVar("T")

IMPORT_CACHE_KIB = 128 * 1024
"""The page cache while importing: the FTS index's pages stay in memory (about 15% faster
at 100k turns)."""


class SqliteStore(Store):
    """The store in the SQLite file at ``path`` (see the package docstring)."""

    kind: ClassVar[str] = "sqlite"
    serves_one_tenant: ClassVar[bool] = False
    server_keeps_copies: ClassVar[bool] = False
    refuses_nul: ClassVar[bool] = False

    conn: SqliteConnection

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        tenant: str | None = None,
        migrate_schema: bool = True,
        create: bool = True,
    ) -> None:
        """Open (creating and migrating as asked) the file at ``path``; see
        `connection.connect` for what is raised."""
        self.path = Path(path)
        self.location = str(self.path)
        self.tenant = tenant
        self.repair_notices: list[Callable[[str], None]] = []
        self._attach(connect(self.path, migrate_schema=migrate_schema, create=create))

    def _attach(self, conn: SqliteConnection) -> None:
        self.conn = conn
        conn.store = self
        self._wal = wal_identity(self.path)

    def open_again(self) -> SqliteStore:
        return SqliteStore(self.path, tenant=self.tenant, migrate_schema=False)

    def refresh(self) -> str | None:
        """When the -wal file this store opened was removed under this process (which goes
        on writing to the removed file, unseen by any other process, and lost if it is
        killed): its content is put back into the database file by a checkpoint and the
        file opened again, with a new -wal; returns the note saying so (one stat)."""
        if not checkpoint_lost_wal(self.conn, self.path, self._wal):
            return None
        with contextlib.suppress(DatabaseError):
            self.conn.close()
        self._attach(connect(self.path))
        return (
            "the database's -wal file was removed while rheo had it open; what was written "
            "since was put back into the database file, which is open again"
        )

    # --- transactions --------------------------------------------------------------------

    def _begin(self, wait_s: float | None) -> None:
        """``BEGIN IMMEDIATE``: the write lock up front, waiting the busy timeout (or
        ``wait_s``, for this begin only) for another process's; SQLite's SQLITE_BUSY is
        raised as Busy."""
        if wait_s is None:
            self.conn.execute("BEGIN IMMEDIATE")
            return
        previous = self.conn.wait_s
        self.conn.set_wait(wait_s)
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        finally:
            self.conn.set_wait(previous)

    def set_wait(self, seconds: float) -> None:
        self.conn.set_wait(seconds)

    def _begin_snapshot(self) -> None:
        self.conn.execute("BEGIN")
        self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()

    # --- search --------------------------------------------------------------------------

    def turn_ids(
        self,
        profile: str,
        terms: list[str],
        *,
        any_term: bool,
        newer_than: int | None,
        up_to: int | None,
        limit: int,
    ) -> list[int]:
        return search.turn_ids(
            self.conn, profile, terms, any_term=any_term, newer_than=newer_than, up_to=up_to,
            limit=limit,
        )  # fmt: skip

    def term_turn_ids(self, profile: str, term: str, cap: int) -> list[int]:
        return search.term_turn_ids(self.conn, profile, term, cap)

    def newest_turn_ids(self, profile: str, terms: list[str], limit: int) -> list[int]:
        return search.newest_turn_ids(self.conn, profile, terms, limit)

    def cjk_turn_ids(self, profile: str, run: str, limit: int) -> list[int]:
        return search.cjk_turn_ids(self.conn, profile, run, limit)

    def trigram_turns(self, profile: str, columns: str, grams: list[str], limit: int) -> list[Any]:
        return search.trigram_turns(self.conn, profile, columns, grams, limit)

    def item_source_turns(self, profile: str, terms: list[str], limit: int) -> list[Any]:
        return search.item_source_turns(self.conn, profile, terms, limit)

    def search_items(
        self,
        profile: str,
        terms: list[str],
        *,
        any_term: bool,
        statuses: tuple[str, ...] | None,
        limit: int,
        view: tuple[str, list[Any]] = ("", []),
    ) -> list[Any]:
        return search.search_items(
            self.conn, profile, terms, any_term=any_term, statuses=statuses, limit=limit,
            view=view,
        )  # fmt: skip

    def search_digests(self, profile: str, terms: list[str], limit: int) -> list[Any]:
        return search.search_digests(self.conn, profile, terms, limit)

    def search_chunks(
        self, profile: str, terms: list[str], *, any_term: bool, limit: int
    ) -> list[Any]:
        return search.search_chunks(self.conn, profile, terms, any_term=any_term, limit=limit)

    def plain_turn_ids(self, profile: str, terms: list[str], limit: int) -> list[int]:
        return search.plain_turn_ids(self.conn, profile, terms, limit)

    def _unindexed(self, column: str) -> str:
        # The unary + keeps SQLite off an index on the column (on the source-turn one).
        return f"+{column}"

    # --- writing through the search indexes ----------------------------------------------

    INDEXES: ClassVar[dict[str, tuple[str, ...]]] = {
        "turns": health.TURN_INDEXES,
        "memory_items": ("memory_items_fts",),
        "digests": ("digests_fts",),
        "kb_chunks": ("kb_chunks_fts",),
    }
    """The FTS5 indexes an insert into each table writes (its triggers)."""

    def execute_indexed(
        self, table: str, sql: str, params: Any = (), *, many: bool = False
    ) -> Cursor:
        """See `Store.execute_indexed`: a failure that may be a damaged index rebuilds the
        table's indexes from their tables (in the caller's transaction) and runs the insert
        once more, telling `repair_notices`."""
        return health.execute_indexed(
            self.conn, self.INDEXES[table], sql, params, many=many, notices=self.repair_notices
        )

    def through_damaged_index(self, table: str, attempt: Callable[[], T]) -> tuple[T, str | None]:
        """See `Store.through_damaged_index`: when ``attempt`` fails on a damaged or missing
        index of ``table``, the indexes are rebuilt from the table and ``attempt`` runs once
        more; if they cannot be rebuilt, it runs with the table's index triggers set aside
        (the rows are indexed at 'rheo doctor --repair'). Any other failure is raised."""
        try:
            return attempt(), None
        except health.DAMAGE as exc:
            if not health.may_be_an_index(exc):
                raise
            why = " ".join(str(exc).split())[:120] or type(exc).__name__
            indexes = self.INDEXES[table]
            try:
                rebuilt = health.rebuild_indexes(self.conn, list(indexes))
            except health.DAMAGE as again:
                if not health.may_be_an_index(again):
                    raise exc from None
                with self._unindexed_inserts(table, indexes):
                    result = attempt()
                return result, (
                    f"the search index is damaged ({why}) and could not be rebuilt "
                    f"({' '.join(str(again).split())[:120]}); the turn is stored, not yet "
                    "searchable: 'rheo doctor --repair' rebuilds the index"
                )
            result = attempt()
            done = ", ".join(rebuilt)
            return result, f"the search index was damaged ({why}); rebuilt {done} from the ledger"

    @contextlib.contextmanager
    def _unindexed_inserts(self, table: str, indexes: Sequence[str]) -> Iterator[None]:
        """One write transaction in which ``table``'s index-writing insert triggers are set
        aside and then put back as they were (a trigger naming an index that cannot be
        opened fails even when its condition is false)."""
        names = [f"{name}_insert" for name in indexes]
        with self.write():
            marks = ",".join("?" * len(names))
            triggers = self.conn.execute(
                "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' "
                f"AND tbl_name = ? AND name IN ({marks})",
                (table, *names),
            ).fetchall()
            for name, _sql in triggers:
                self.conn.execute(f"DROP TRIGGER {name}")
            yield
            for _name, sql in triggers:
                self.conn.execute(sql)

    def mend_indexes(self, *, notify: bool = True) -> str | None:
        return health.mend_unopenable(self.conn, notices=self.repair_notices if notify else ())

    @contextlib.contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Indexes that cannot be opened mended first; a larger page cache while importing,
        restored afterwards."""
        self.mend_indexes()
        previous = self.conn.execute("PRAGMA cache_size").fetchone()[0]
        self.conn.execute(f"PRAGMA cache_size = -{IMPORT_CACHE_KIB}")
        try:
            yield
        finally:
            self.conn.execute(f"PRAGMA cache_size = {int(previous)}")

    @contextlib.contextmanager
    def deferred_indexing(self, table: str) -> Iterator[None]:
        """The turns' indexes written in one statement each for the whole batch (migration
        m005: ``fts_deferred`` holds the triggers back), each row of the word index with its
        profile's tenant token (migration m011)."""
        if table != "turns":
            yield
            return
        first_new = int(self.conn.execute("SELECT coalesce(max(id), 0) FROM turns").fetchone()[0])
        self.conn.execute("INSERT INTO fts_deferred(on_) VALUES (1)")
        yield
        self.conn.execute(
            "INSERT INTO turns_fts(rowid, content, tenant) "
            "SELECT id, content, tenant FROM turns WHERE id > ?",
            (first_new,),
        )
        self.conn.execute(
            "INSERT INTO turns_cjk(rowid, content) SELECT id, content FROM turns "
            f"WHERE id > ? AND content GLOB '{CJK_GLOB}'",
            (first_new,),
        )
        self.conn.execute("DELETE FROM fts_deferred")

    # --- purge, backup, health -----------------------------------------------------------

    def purging(self, profile: str, ref: str) -> contextlib.AbstractContextManager[Any]:
        return purge.purging(self.conn, ref)

    def backup(self, dest: str, export: Callable[[str], int]) -> dict[str, Any]:
        """The whole file (every profile) through SQLite's online backup API: ``{"bytes"}``
        (see `backup.backup`); ``export`` is not used."""
        return {"bytes": _backup(self.conn, dest)}

    def health(self, *, repair: bool) -> Health:
        return doctor.checks(self.conn, self.path, repair=repair)
