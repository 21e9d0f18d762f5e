"""Schema versions 10 and 11: shared and assistant-specific memory, and profiles isolated
inside the word index."""

from __future__ import annotations

import sqlite3

from .script import run_script


def m010_assistant_scope(conn: sqlite3.Connection) -> None:
    """Shared and assistant-specific memory (Solid# article): ``assistant`` is NULL for a fact
    every assistant of the profile sees (about the person or company), else the name of the
    one assistant whose work it is about. Existing items stay shared."""
    run_script(
        conn,
        """
        ALTER TABLE memory_items ADD COLUMN assistant TEXT;
        CREATE INDEX memory_items_assistant ON memory_items(profile, assistant, topic, status);
        """,
    )


def m011_tenant_in_word_index(conn: sqlite3.Connection) -> None:
    """Profiles isolated inside the word index: every turn's FTS5 row also holds its
    profile as one token (``p`` + the name's UTF-8 hex + ``x``, in a ``tenant`` column), so
    a search is scoped by profile inside MATCH, before any
    LIMIT, and one profile's volume never crowds another's candidates out. The token is
    written by the insert trigger and the bulk path (`text.fts.tenant_token`), and is also a
    virtual generated column of ``turns``, so FTS5's 'rebuild', 'integrity-check' and 'delete'
    read the same value from the content table.
    Items are also indexed by source turn, for marking history lines whose fact changed."""
    run_script(
        conn,
        """
        ALTER TABLE turns ADD COLUMN tenant TEXT
            GENERATED ALWAYS AS ('p' || hex(profile) || 'x') VIRTUAL;
        DROP TRIGGER turns_fts_insert;
        DROP TABLE turns_fts;
        CREATE VIRTUAL TABLE turns_fts USING fts5(
            content, tenant, content='turns', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER turns_fts_insert AFTER INSERT ON turns
        WHEN NOT EXISTS (SELECT 1 FROM fts_deferred)
        BEGIN
            INSERT INTO turns_fts(rowid, content, tenant)
            VALUES (new.id, new.content, 'p' || hex(new.profile) || 'x');
        END;
        INSERT INTO turns_fts(rowid, content, tenant)
        SELECT id, content, 'p' || hex(profile) || 'x' FROM turns;
        CREATE INDEX memory_items_source ON memory_items(source_turn_id);
        """,
    )
