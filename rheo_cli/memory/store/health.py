"""Checking and repairing the store: SQLite's integrity, the FTS5 indexes, missing tables.

Every index here is derived from a table (turns, memory items, digests), so rebuilding one
reads the table and never changes a row of the ledger.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from .db import write
from .migrations import CJK_GLOB
from .pg import dialect

TABLES = (
    "sessions",
    "turns",
    "memory_items",
    "memory_events",
    "digests",
    "jobs",
    "schema_migrations",
    "fts_deferred",
)
"""Tables every current database has."""

FTS_INDEXES: dict[str, tuple[str, str, str]] = {
    "turns_fts": (
        "turns",
        "content, tenant",  # tenant: the profile's token (migration m011)
        "tokenize='porter unicode61 remove_diacritics 2'",
    ),
    "turns_cjk": ("turns", "content", "tokenize='trigram'"),
    "memory_items_fts": (
        "memory_items",
        "topic, label, properties",
        "tokenize='porter unicode61 remove_diacritics 2'",
    ),
    "digests_fts": (
        "digests",
        "narrative, decisions",
        "tokenize='porter unicode61 remove_diacritics 2'",
    ),
    "kb_chunks_fts": (
        "kb_chunks",
        "heading, content",
        "tokenize='porter unicode61 remove_diacritics 2'",
    ),
}
"""Each FTS5 index: its content table, indexed columns and tokenizer. ``turns_cjk`` holds only
turns written in scripts without spaces (see `migrations.v004_006.m004_trigram_index`)."""


DAMAGE = (sqlite3.DatabaseError, MemoryError)
"""What SQLite raises on a damaged index: an error, or MemoryError (SQLITE_NOMEM) when a
garbled FTS5 structure record gives absurd sizes."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def integrity_problems(conn: sqlite3.Connection) -> list[str]:
    """What ``PRAGMA integrity_check`` reports (empty when it says ok)."""
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall()]
    except DAMAGE as exc:
        return [_one_line(exc)]
    return [] if rows == ["ok"] else rows[:20]


def missing_tables(conn: sqlite3.Connection) -> list[str]:
    """Tables and FTS indexes of the current schema that the database lacks."""
    present = {
        str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    return [t for t in (*TABLES, *FTS_INDEXES) if t not in present]


def fts_problems(conn: sqlite3.Connection) -> dict[str, str]:
    """FTS5 ``integrity-check`` of every index against its table: index name -> problem.

    ``turns_cjk`` indexes a subset of turns by design, so it is checked for internal
    consistency only."""
    problems: dict[str, str] = {}
    present = set(FTS_INDEXES) - set(missing_tables(conn))
    for name in FTS_INDEXES:
        if name not in present:
            problems[name] = "missing"
            continue
        rank = 0 if name == "turns_cjk" else 1
        try:
            with write(conn):
                conn.execute(f"INSERT INTO {name}({name}, rank) VALUES('integrity-check', {rank})")
        except DAMAGE as exc:
            problems[name] = _one_line(exc) or "out of memory reading it: damaged"
    return problems


NOT_THE_INDEX = ("locked", "busy", "readonly", "read-only", "full", "disk i/o")
"""Words of errors a rebuilt search index cannot help with (a lock, a read-only, full or
failing disk)."""

TURN_INDEXES = ("turns_fts", "turns_cjk")
"""The indexes an insert into ``turns`` writes (its triggers)."""


def may_be_an_index(exc: BaseException) -> bool:
    """Whether a failed write may be a damaged or missing search index (not a lock, a
    read-only or full disk): worth rebuilding the indexes and trying once more."""
    return isinstance(exc, DAMAGE) and not any(w in str(exc).lower() for w in NOT_THE_INDEX)


def _fresh_shadows(name: str) -> list[tuple[str, str, list[tuple[object, ...]]]]:
    """The shadow tables of an empty FTS5 index ``name`` as this SQLite makes them: (table,
    its CREATE statement, its rows), from a throwaway in-memory database."""
    table, columns, tokenize = FTS_INDEXES[name]
    scratch = sqlite3.connect(":memory:")
    try:
        scratch.execute(
            f"CREATE VIRTUAL TABLE {name} USING fts5({columns}, content='{table}', "
            f"content_rowid='id', {tokenize})"
        )
        shadows = scratch.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name != ? "
            "AND substr(name, 1, ?) = ? ORDER BY name",
            (name, len(name) + 1, name + "_"),
        ).fetchall()
        return [
            (str(t), str(sql), scratch.execute(f'SELECT * FROM "{t}"').fetchall())
            for t, sql in shadows
        ]
    finally:
        scratch.close()


def _reset_shadows(conn: sqlite3.Connection, name: str) -> None:
    """Make the FTS5 index ``name`` empty and sound again when it cannot even be opened (its
    structure record or configuration garbled, a shadow table dropped: FTS5's own
    'delete-all' and DROP TABLE both need to open it): every shadow table is dropped and
    made again as a new, empty index has it. Only derived data is touched."""
    for table, create, rows in _fresh_shadows(name):
        conn.execute(f'DROP TABLE IF EXISTS "{table}"')
        conn.execute(create)
        for row in rows:
            conn.execute(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(row))})', row)


def rebuild_indexes(conn: sqlite3.Connection, names: list[str] | None = None) -> list[str]:
    """Rebuild FTS5 indexes (all, or ``names``) from their tables, recreating a missing one
    and the shadow tables of one that cannot be opened, in one transaction. Returns the
    names rebuilt. Raises sqlite3.DatabaseError when a content table itself cannot be
    read."""
    chosen = list(FTS_INDEXES) if names is None else [n for n in names if n in FTS_INDEXES]
    with write(conn):
        present = {
            str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        for name in chosen:
            table, columns, tokenize = FTS_INDEXES[name]
            if name in present:
                # delete-all drops the index's own pages, even damaged ones, without reading
                # them; the rebuild then reads only the table. An index that cannot be
                # opened at all gets new shadow tables instead.
                try:
                    with write(conn):
                        conn.execute(f"INSERT INTO {name}({name}) VALUES('delete-all')")
                except DAMAGE as exc:
                    if not may_be_an_index(exc):
                        raise
                    _reset_shadows(conn, name)
            else:
                for shadow, _create, _rows in _fresh_shadows(name):
                    conn.execute(f'DROP TABLE IF EXISTS "{shadow}"')  # left by a lost index
                conn.execute(
                    f"CREATE VIRTUAL TABLE {name} USING fts5({columns}, content='{table}', "
                    f"content_rowid='id', {tokenize})"
                )
            if name == "turns_cjk":
                conn.execute(
                    "INSERT INTO turns_cjk(rowid, content) SELECT id, content FROM turns "
                    f"WHERE content GLOB '{CJK_GLOB}'"
                )
            else:
                conn.execute(f"INSERT INTO {name}({name}) VALUES('rebuild')")
    return chosen


REPAIR_NOTICES: list[Callable[[str], None]] = []
"""Called with one line whenever a write rebuilt a damaged search index to go through (a
front end shows it); the engine itself prints nothing."""


def execute_indexed(
    conn: sqlite3.Connection,
    names: Sequence[str],
    sql: str,
    params: Sequence[Any] | Sequence[Sequence[Any]] = (),
    *,
    many: bool = False,
) -> sqlite3.Cursor:
    """Run an insert whose triggers write the FTS5 indexes ``names`` (``many``: with
    executemany) so that a damaged or missing index never refuses it: on a failure that may
    be the index, the indexes are rebuilt from their tables (inside the caller's
    transaction) and the insert is run once more, and `REPAIR_NOTICES` are told. Any other
    failure, or one the rebuild cannot mend, is raised as it was."""

    def run() -> sqlite3.Cursor:
        with write(conn):  # a savepoint inside the caller's transaction
            if many:
                return conn.executemany(sql, params)
            return conn.execute(sql, params)

    if dialect(conn) != "sqlite":
        return run()
    try:
        return run()
    except DAMAGE as exc:
        if not may_be_an_index(exc):
            raise
        try:
            rebuilt = rebuild_indexes(conn, list(names))
        except DAMAGE:
            raise exc from None
        cur = run()
        why = " ".join(str(exc).split())[:120] or type(exc).__name__
        for notice in REPAIR_NOTICES:
            notice(f"the search index was damaged ({why}); rebuilt {', '.join(rebuilt)}")
        return cur


def mend_unopenable(conn: sqlite3.Connection, *, notify: bool = True) -> str | None:
    """Rebuild the FTS5 indexes that cannot even be opened — a garbled structure record or
    configuration, a dropped shadow table or index — before writes that would otherwise fail
    on them (an import, a turn); one prepared statement per index, no row read. Returns the
    one-line note of what was rebuilt (also told to `REPAIR_NOTICES` when ``notify``), or
    None when every index opens (always on PostgreSQL)."""
    if dialect(conn) != "sqlite":
        return None
    broken: dict[str, str] = {}
    for name in FTS_INDEXES:
        try:  # a term lookup: opens the index, reads its structure record and one b-tree
            conn.execute(
                f"SELECT rowid FROM {name} WHERE {name} MATCH '\"rheoprobe\"' LIMIT 1"
            ).fetchall()
        except DAMAGE as exc:
            if may_be_an_index(exc):
                broken[name] = " ".join(str(exc).split())[:120] or type(exc).__name__
    if not broken:
        return None
    rebuilt = rebuild_indexes(conn, list(broken))
    note = (
        f"the search index was damaged ({'; '.join(broken.values())}); rebuilt "
        f"{', '.join(rebuilt)} from the stored rows"
    )
    if notify:
        for notice in REPAIR_NOTICES:
            notice(note)
    return note
