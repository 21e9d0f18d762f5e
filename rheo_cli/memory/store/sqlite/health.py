"""Checking and repairing the store: SQLite's integrity, the FTS5 indexes, missing tables.

Every index here is derived from a table (turns, memory items, digests), so rebuilding one
reads the table and never changes a row of the ledger.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from ..api import Cursor
from ..errors import DatabaseError, Integrity
from .connection import SqliteConnection
from .migrations import CJK_GLOB

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


DAMAGE = (DatabaseError, MemoryError)
"""What a damaged index raises (SQLite's failure as rheo's error), or MemoryError
(SQLITE_NOMEM) when a garbled FTS5 structure record gives absurd sizes."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def integrity_problems(conn: SqliteConnection) -> list[str]:
    """What ``PRAGMA integrity_check`` reports (empty when it says ok)."""
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall()]
    except DAMAGE as exc:
        return [_one_line(exc)]
    return [] if rows == ["ok"] else rows[:20]


def read_only(conn: SqliteConnection) -> str | None:
    """Why the store cannot be written (SQLite's words), or None when it can: a write that
    changes nothing is tried and rolled back (a read-only file or folder, a read-only
    mount). Another process's lock is not read-only: None."""
    if conn.in_transaction:
        return None
    try:
        conn.execute("PRAGMA busy_timeout = 0")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM fts_deferred WHERE 0")
    except DatabaseError as exc:
        lowered = str(exc).lower()
        if "readonly" in lowered or "read-only" in lowered:
            return _one_line(exc)
        return None
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.set_wait(conn.wait_s)
    return None


@functools.lru_cache(maxsize=1)
def _template() -> tuple[tuple[str, str, str, str], ...]:
    """The current schema's tables, indexes and triggers (type, name, table, SQL), as a new
    store has them: every migration run on an in-memory database."""
    from .migrations import migrate

    scratch = sqlite3.connect(":memory:", isolation_level=None)
    try:
        migrate(scratch)
        return tuple(
            (str(t), str(n), str(tbl), str(sql))
            for t, n, tbl, sql in scratch.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL "
                "AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
            )
        )
    finally:
        scratch.close()


def _plain_tables(template: tuple[tuple[str, str, str, str], ...]) -> list[str]:
    """The template's ordinary tables: not the FTS5 indexes nor their shadow tables."""
    shadows = tuple(f"{name}_" for name in FTS_INDEXES)
    return [
        name
        for kind, name, _table, sql in template
        if kind == "table"
        and not sql.upper().startswith("CREATE VIRTUAL")
        and not name.startswith(shadows)
    ]


def missing_tables(conn: SqliteConnection) -> list[str]:
    """Tables and FTS indexes of the current schema that the database lacks (on a store of
    an older schema version, only those every version has)."""
    present = {
        str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    from .migrations import SCHEMA_VERSION, schema_version

    # A store not yet upgraded lacks the later tables by right: only the early ones count.
    later = _plain_tables(_template()) if schema_version(conn) >= SCHEMA_VERSION else []
    wanted = dict.fromkeys([*TABLES, *later, *FTS_INDEXES])
    return [t for t in wanted if t not in present]


_REFERENCED = {
    "sessions": (
        "SELECT max(session_id) FROM turns",
        "SELECT max(session_id) FROM digests",
        "SELECT max(ref_id) FROM jobs WHERE kind = 'digest'",
    ),
    "turns": (
        "SELECT max(source_turn_id) FROM memory_items",
        "SELECT max(source_turn_id) FROM memory_events",
        "SELECT max(ref_id) FROM jobs WHERE kind = 'extract'",
    ),
    "memory_items": (
        "SELECT max(item_id) FROM memory_events",
        "SELECT max(related_item_id) FROM memory_events",
    ),
    "kb_documents": ("SELECT max(document_id) FROM kb_chunks",),
}
"""For a table that is made again: ids other tables still hold, which its new rows must
never take (its AUTOINCREMENT counter went with it)."""


def _sessions_from_turns(conn: SqliteConnection) -> None:
    """Sessions made again from the turns that name them (each turn keeps its session's id):
    profile, first and last turn's time, count; numbered per profile in id order, past
    every number the profile has shown."""
    try:
        conn.execute(
            "INSERT INTO sessions(id, profile, started_at, last_turn_at, turns, number) "
            "SELECT session_id, profile, min(ts), max(ts), count(*), "
            "ROW_NUMBER() OVER (PARTITION BY profile ORDER BY session_id) "
            "FROM turns GROUP BY session_id, profile ORDER BY session_id"
        )
        conn.execute(
            "INSERT INTO profile_counters(profile, sessions_opened) "
            "SELECT profile, max(number) FROM sessions WHERE true GROUP BY profile "
            "ON CONFLICT(profile) DO UPDATE SET sessions_opened = "
            "max(sessions_opened, excluded.sessions_opened)"
        )
    except DatabaseError:
        return  # the turns cannot be read: the sessions stay empty


def recreate_tables(conn: SqliteConnection, names: Sequence[str]) -> list[str]:
    """Make the missing ordinary tables ``names`` again, empty, as the current schema has
    them, with their indexes and triggers, in one transaction; their counters start past
    every id other tables still hold, so nothing left pointing at a lost row is taken for a
    new one, and the search indexes of their rows are rebuilt (empty). What they held is
    gone, except sessions: they are made again from the turns (`_sessions_from_turns`).
    Returns the names made."""
    template = _template()
    plain = set(_plain_tables(template))
    chosen = [n for n in names if n in plain]
    if not chosen:
        return []
    with conn.store.write():
        present = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
        made = [n for n in chosen if n not in present]
        for kind in ("table", "index", "trigger"):
            for k, name, table, sql in template:
                if k == kind and table in made and name not in present:
                    conn.execute(sql)
        for name in made:
            floor = 0
            for query in _REFERENCED.get(name, ()):
                try:
                    floor = max(floor, int(conn.execute(query).fetchone()[0] or 0))
                except DatabaseError:
                    continue  # the referring table is missing too
            if floor:
                conn.execute("DELETE FROM sqlite_sequence WHERE name = ?", (name,))
                conn.execute("INSERT INTO sqlite_sequence(name, seq) VALUES (?, ?)", (name, floor))
        if "sessions" in made and "turns" not in made:
            _sessions_from_turns(conn)
        indexes = [i for i, (table, _c, _t) in FTS_INDEXES.items() if table in made]
        if indexes:
            rebuild_indexes(conn, indexes)
    return made


def fts_problems(conn: SqliteConnection) -> dict[str, str]:
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
            with conn.store.write():
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
    if isinstance(exc, Integrity):  # a constraint refused the row itself
        return False
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


def _reset_shadows(conn: SqliteConnection, name: str) -> None:
    """Make the FTS5 index ``name`` empty and sound again when it cannot even be opened (its
    structure record or configuration garbled, a shadow table dropped: FTS5's own
    'delete-all' and DROP TABLE both need to open it): every shadow table is dropped and
    made again as a new, empty index has it. Only derived data is touched."""
    for table, create, rows in _fresh_shadows(name):
        conn.execute(f'DROP TABLE IF EXISTS "{table}"')
        conn.execute(create)
        for row in rows:
            conn.execute(f'INSERT INTO "{table}" VALUES ({", ".join("?" * len(row))})', row)


def rebuild_indexes(conn: SqliteConnection, names: list[str] | None = None) -> list[str]:
    """Rebuild FTS5 indexes (all, or ``names``) from their tables, recreating a missing one
    and the shadow tables of one that cannot be opened, in one transaction. Returns the
    names rebuilt. Raises DatabaseError when a content table itself cannot be read."""
    chosen = list(FTS_INDEXES) if names is None else [n for n in names if n in FTS_INDEXES]
    with conn.store.write():
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
                    with conn.store.write():
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


def execute_indexed(
    conn: SqliteConnection,
    names: Sequence[str],
    sql: str,
    params: Any = (),
    *,
    many: bool = False,
    notices: Sequence[Callable[[str], None]] = (),
) -> Cursor:
    """Run an insert whose triggers write the FTS5 indexes ``names`` (``many``: with
    executemany) so that a damaged or missing index never refuses it: on a failure that may
    be the index, the indexes are rebuilt from their tables (inside the caller's
    transaction) and the insert is run once more, and ``notices`` are told. Any other
    failure, or one the rebuild cannot mend, is raised as it was."""

    def run() -> Cursor:
        with conn.store.write():  # a savepoint inside the caller's transaction
            if many:
                return conn.executemany(sql, params)
            return conn.execute(sql, params)

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
        for notice in notices:
            notice(f"the search index was damaged ({why}); rebuilt {', '.join(rebuilt)}")
        return cur


def mend_unopenable(
    conn: SqliteConnection, *, notices: Sequence[Callable[[str], None]] = ()
) -> str | None:
    """Rebuild the FTS5 indexes that cannot even be opened — a garbled structure record or
    configuration, a dropped shadow table or index — before writes that would otherwise fail
    on them (an import, a turn); one prepared statement per index, no row read. Returns the
    one-line note of what was rebuilt (also told to ``notices``), or None when every index
    opens."""
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
    for notice in notices:
        notice(note)
    return note
