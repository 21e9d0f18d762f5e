"""Schema versions 4 to 6: a trigram index for scripts written without spaces, deferred
indexing for bulk loads, and no INSERT OR REPLACE over append-only rows."""

from __future__ import annotations

import sqlite3

from .script import run_script

CJK_GLOB = "*[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u0e00-\u0e7f]*"
"""GLOB pattern of text with characters of scripts written without spaces between words."""


def m004_trigram_index(conn: sqlite3.Connection) -> None:
    """A trigram FTS5 index over turns written in scripts without spaces (Chinese, Japanese,
    Korean, Thai), whose words the word index cannot split. Only such turns are indexed."""
    run_script(
        conn,
        f"""
        CREATE VIRTUAL TABLE turns_cjk USING fts5(
            content, content='turns', content_rowid='id', tokenize='trigram'
        );
        CREATE TRIGGER turns_cjk_insert AFTER INSERT ON turns
        WHEN new.content GLOB '{CJK_GLOB}'
        BEGIN INSERT INTO turns_cjk(rowid, content) VALUES (new.id, new.content); END;
        INSERT INTO turns_cjk(rowid, content)
        SELECT id, content FROM turns WHERE content GLOB '{CJK_GLOB}';
        """,
    )


def m005_deferred_indexing(conn: sqlite3.Connection) -> None:
    """Let the bulk write path index a whole batch of turns at once (twice as fast as one
    trigger call per row): while a row in ``fts_deferred`` exists — only ever inside the bulk
    path's own transaction — the insert triggers stand aside and the batch is indexed at its
    end."""
    run_script(
        conn,
        f"""
        CREATE TABLE fts_deferred (on_ INTEGER PRIMARY KEY CHECK (on_ = 1));
        DROP TRIGGER turns_fts_insert;
        CREATE TRIGGER turns_fts_insert AFTER INSERT ON turns
        WHEN NOT EXISTS (SELECT 1 FROM fts_deferred)
        BEGIN INSERT INTO turns_fts(rowid, content) VALUES (new.id, new.content); END;
        DROP TRIGGER turns_cjk_insert;
        CREATE TRIGGER turns_cjk_insert AFTER INSERT ON turns
        WHEN new.content GLOB '{CJK_GLOB}' AND NOT EXISTS (SELECT 1 FROM fts_deferred)
        BEGIN INSERT INTO turns_cjk(rowid, content) VALUES (new.id, new.content); END;
        """,
    )


def m006_no_replace(conn: sqlite3.Connection) -> None:
    """INSERT OR REPLACE deletes the row it replaces without firing DELETE triggers unless a
    connection turns recursive triggers on; refuse an insert over an existing id outright, on
    every connection, for the append-only tables."""
    script = ""
    for table, what in (
        ("turns", "the ledger"),
        ("memory_events", "memory history"),
        ("digests", "the digest log"),
    ):
        script += f"""
        CREATE TRIGGER {table}_no_replace BEFORE INSERT ON {table}
        WHEN EXISTS (SELECT 1 FROM {table} WHERE id = new.id)
        BEGIN SELECT RAISE(ABORT, '{what} is append-only: rows cannot be replaced'); END;
        """
    run_script(conn, script)
