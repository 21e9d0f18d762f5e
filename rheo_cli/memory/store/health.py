"""Checking and repairing the store: SQLite's integrity, the FTS5 indexes, missing tables.

Every index here is derived from a table (turns, memory items, digests), so rebuilding one
reads the table and never changes a row of the ledger.
"""

from __future__ import annotations

import sqlite3

from .db import write
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


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


def integrity_problems(conn: sqlite3.Connection) -> list[str]:
    """What ``PRAGMA integrity_check`` reports (empty when it says ok)."""
    try:
        rows = [str(r[0]) for r in conn.execute("PRAGMA integrity_check").fetchall()]
    except sqlite3.DatabaseError as exc:
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
        except sqlite3.DatabaseError as exc:
            problems[name] = _one_line(exc)
    return problems


def rebuild_indexes(conn: sqlite3.Connection, names: list[str] | None = None) -> list[str]:
    """Rebuild FTS5 indexes (all, or ``names``) from their tables, recreating a missing one,
    in one transaction. Returns the names rebuilt. Raises sqlite3.DatabaseError when a
    content table itself cannot be read."""
    chosen = list(FTS_INDEXES) if names is None else [n for n in names if n in FTS_INDEXES]
    with write(conn):
        present = {
            str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        for name in chosen:
            table, columns, tokenize = FTS_INDEXES[name]
            if name in present:
                # delete-all drops the index's own pages, even damaged ones, without reading
                # them; the rebuild then reads only the table.
                conn.execute(f"INSERT INTO {name}({name}) VALUES('delete-all')")
            else:
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
