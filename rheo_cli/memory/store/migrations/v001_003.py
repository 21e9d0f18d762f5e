"""Versioned schema migrations, applied in order when the store is opened.

Each migration is a small function ``mNNN_name(conn)``; `MIGRATIONS` lists them in order and
``PRAGMA user_version`` records how many have run (also logged in ``schema_migrations``). A new
database and an old one take the same path, one step at a time, each step in its own
``BEGIN IMMEDIATE`` transaction so two processes opening the store at once cannot both apply it.
Never edit a migration that has shipped: add a new one.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime

from .. import crash
from ..errors import StoreError

Migration = Callable[[sqlite3.Connection], None]


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Execute a multi-statement SQL script inside the caller's transaction.

    ``Connection.executescript`` would COMMIT first; this splits the script into complete
    statements (trigger bodies included) with ``sqlite3.complete_statement`` and runs each.
    """
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                conn.execute(pending)
            pending = ""
    if pending.strip():
        raise StoreError(f"incomplete SQL statement in migration: {pending.strip()[:60]}")


def _append_only(table: str, what: str) -> str:
    """SQL for the two triggers that make ``table`` refuse UPDATE and DELETE."""
    return f"""
    CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table}
    BEGIN SELECT RAISE(ABORT, '{what} is append-only: rows cannot be changed'); END;
    CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}
    BEGIN SELECT RAISE(ABORT, '{what} is append-only: rows cannot be deleted'); END;
    """


def m001_ledger(conn: sqlite3.Connection) -> None:
    """The ledger (Rheo article §03, layer 0): sessions, append-only turns and their FTS5 index."""
    run_script(
        conn,
        """
        CREATE TABLE schema_migrations (
            version    INTEGER PRIMARY KEY,
            name       TEXT NOT NULL,
            applied_at TEXT NOT NULL
        );
        CREATE TABLE sessions (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            profile      TEXT NOT NULL,
            started_at   TEXT NOT NULL,
            last_turn_at TEXT NOT NULL,
            turns        INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX sessions_profile ON sessions(profile, id);
        CREATE TABLE turns (
            id                 INTEGER PRIMARY KEY AUTOINCREMENT,
            profile            TEXT NOT NULL,
            session_id         INTEGER NOT NULL REFERENCES sessions(id),
            role               TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
            content            TEXT NOT NULL,
            ts                 TEXT NOT NULL,
            model              TEXT,
            status             TEXT CHECK (status IN ('ok', 'interrupted', 'error')),
            input_tokens       INTEGER,
            output_tokens      INTEGER,
            cache_read_tokens  INTEGER,
            cache_write_tokens INTEGER,
            meta               TEXT NOT NULL DEFAULT '{}',
            CHECK ((role = 'user') = (status IS NULL))
        );
        CREATE INDEX turns_profile ON turns(profile, id);
        CREATE INDEX turns_session ON turns(session_id, id);
        CREATE INDEX turns_profile_ts ON turns(profile, ts);
        CREATE VIRTUAL TABLE turns_fts USING fts5(
            content, content='turns', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER turns_fts_insert AFTER INSERT ON turns
        BEGIN INSERT INTO turns_fts(rowid, content) VALUES (new.id, new.content); END;
        """
        + _append_only("turns", "the ledger"),
    )


def m002_memory(conn: sqlite3.Connection) -> None:
    """Memory items and their event history, session digests and the background job queue.

    Item content (topic, label, properties) is immutable once written: a changed fact is a new
    item that supersedes the old one (Rheo article §05). Items are never deleted; events, like
    turns,
    are append-only.
    """
    run_script(
        conn,
        """
        CREATE TABLE memory_items (
            id             INTEGER PRIMARY KEY AUTOINCREMENT,
            profile        TEXT NOT NULL,
            category       TEXT NOT NULL CHECK (category IN ('goal', 'blocker', 'preference',
                               'operations', 'team', 'strategy', 'win', 'open_item', 'fact')),
            topic          TEXT NOT NULL,
            label          TEXT NOT NULL,
            properties     TEXT NOT NULL DEFAULT '{}',
            content_key    TEXT NOT NULL,
            confidence     REAL NOT NULL CHECK (confidence >= 0 AND confidence <= 1),
            reinforcements INTEGER NOT NULL DEFAULT 1,
            pinned         INTEGER NOT NULL DEFAULT 0 CHECK (pinned IN (0, 1)),
            reason         TEXT NOT NULL DEFAULT '',
            source         TEXT NOT NULL,
            source_turn_id INTEGER REFERENCES turns(id),
            created_at     TEXT NOT NULL,
            reinforced_at  TEXT NOT NULL,
            status         TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active',
                               'superseded', 'evicted', 'retracted', 'done')),
            superseded_by  INTEGER REFERENCES memory_items(id),
            conflict_with  INTEGER REFERENCES memory_items(id),
            due_at         TEXT
        );
        CREATE INDEX memory_items_profile ON memory_items(profile, status, category);
        CREATE INDEX memory_items_topic ON memory_items(profile, topic, status);
        CREATE TRIGGER memory_items_content_fixed BEFORE UPDATE OF
            profile, category, topic, label, properties, content_key, source_turn_id,
            created_at ON memory_items
        BEGIN SELECT RAISE(ABORT, 'memory item content is immutable: write a new item'); END;
        CREATE TRIGGER memory_items_no_delete BEFORE DELETE ON memory_items
        BEGIN SELECT RAISE(ABORT, 'memory items are never deleted: retract them'); END;
        CREATE VIRTUAL TABLE memory_items_fts USING fts5(
            topic, label, properties, content='memory_items', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER memory_items_fts_insert AFTER INSERT ON memory_items
        BEGIN
            INSERT INTO memory_items_fts(rowid, topic, label, properties)
            VALUES (new.id, new.topic, new.label, new.properties);
        END;

        CREATE TABLE memory_events (
            id              INTEGER PRIMARY KEY AUTOINCREMENT,
            item_id         INTEGER NOT NULL REFERENCES memory_items(id),
            profile         TEXT NOT NULL,
            ts              TEXT NOT NULL,
            kind            TEXT NOT NULL CHECK (kind IN ('created', 'reinforced',
                                'superseded', 'conflict_flagged', 'resolved', 'pinned',
                                'unpinned', 'retracted', 'evicted', 'done', 'reopened')),
            cause           TEXT NOT NULL,
            related_item_id INTEGER REFERENCES memory_items(id),
            source_turn_id  INTEGER REFERENCES turns(id),
            data            TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX memory_events_item ON memory_events(item_id, id);

        CREATE TABLE digests (
            id              INTEGER PRIMARY KEY AUTOINCREMENT,
            profile         TEXT NOT NULL,
            session_id      INTEGER NOT NULL UNIQUE REFERENCES sessions(id),
            started_at      TEXT NOT NULL,
            ended_at        TEXT NOT NULL,
            narrative       TEXT NOT NULL,
            facts           TEXT NOT NULL DEFAULT '[]',
            procedures      TEXT NOT NULL DEFAULT '[]',
            decisions       TEXT NOT NULL DEFAULT '[]',
            source_turn_ids TEXT NOT NULL DEFAULT '[]',
            model           TEXT,
            created_at      TEXT NOT NULL
        );
        CREATE INDEX digests_profile ON digests(profile, ended_at);
        CREATE VIRTUAL TABLE digests_fts USING fts5(
            narrative, decisions, content='digests', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER digests_fts_insert AFTER INSERT ON digests
        BEGIN
            INSERT INTO digests_fts(rowid, narrative, decisions)
            VALUES (new.id, new.narrative, new.decisions);
        END;

        CREATE TABLE jobs (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            profile     TEXT NOT NULL,
            kind        TEXT NOT NULL CHECK (kind IN ('extract', 'digest')),
            ref_id      INTEGER NOT NULL,
            status      TEXT NOT NULL DEFAULT 'pending'
                            CHECK (status IN ('pending', 'running', 'done', 'failed')),
            attempts    INTEGER NOT NULL DEFAULT 0,
            last_error  TEXT,
            lease_until REAL,
            not_before  REAL,
            created_at  TEXT NOT NULL,
            updated_at  TEXT NOT NULL,
            UNIQUE (kind, ref_id)
        );
        CREATE INDEX jobs_status ON jobs(status, id);
        """
        + _append_only("memory_events", "memory history")
        + _append_only("digests", "the digest log"),
    )


def m003_job_leases(conn: sqlite3.Connection) -> None:
    """Jobs remember which process holds them (a dead holder's job is taken over at once)
    and keep notes: why extractor output was repaired or dropped."""
    run_script(
        conn,
        """
        ALTER TABLE jobs ADD COLUMN leased_by TEXT;
        ALTER TABLE jobs ADD COLUMN notes TEXT NOT NULL DEFAULT '[]';
        CREATE INDEX jobs_ref ON jobs(profile, kind, ref_id);
        """,
    )


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


def m007_knowledge_base(conn: sqlite3.Connection) -> None:
    """The knowledge base (Solid# article, Layer 3.5): documents the person adds, chunked and
    searchable; no decay. A changed file is a new version: the old version's row and chunks
    stay, marked ``replaced`` (or ``removed``), so nothing changes silently."""
    run_script(
        conn,
        """
        CREATE TABLE kb_documents (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            profile      TEXT NOT NULL,
            source       TEXT NOT NULL,
            title        TEXT NOT NULL,
            sha256       TEXT NOT NULL,
            version      INTEGER NOT NULL CHECK (version >= 1),
            status       TEXT NOT NULL CHECK (status IN ('active', 'replaced', 'removed')),
            added_at     TEXT NOT NULL,
            changed_at   TEXT,
            replaced_by  INTEGER REFERENCES kb_documents(id),
            chars        INTEGER NOT NULL
        );
        CREATE INDEX kb_documents_source ON kb_documents(profile, source, version);
        CREATE UNIQUE INDEX kb_documents_one_active ON kb_documents(profile, source)
            WHERE status = 'active';
        CREATE TABLE kb_chunks (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            document_id  INTEGER NOT NULL REFERENCES kb_documents(id),
            profile      TEXT NOT NULL,
            ordinal      INTEGER NOT NULL,
            heading      TEXT NOT NULL,
            content      TEXT NOT NULL
        );
        CREATE INDEX kb_chunks_document ON kb_chunks(document_id, ordinal);
        CREATE VIRTUAL TABLE kb_chunks_fts USING fts5(
            heading, content, content='kb_chunks', content_rowid='id',
            tokenize='porter unicode61 remove_diacritics 2'
        );
        CREATE TRIGGER kb_chunks_fts_insert AFTER INSERT ON kb_chunks BEGIN
            INSERT INTO kb_chunks_fts(rowid, heading, content)
            VALUES (new.id, new.heading, new.content);
        END;
        CREATE TRIGGER kb_chunks_no_change BEFORE UPDATE ON kb_chunks
        BEGIN SELECT RAISE(ABORT, 'knowledge chunks are immutable: add a new version'); END;
        """,
    )


def m008_source_keys(conn: sqlite3.Connection) -> None:
    """Imported turns remember where they came from: ``source_key`` names the message in the
    other tool's history (``chatgpt:<message id>``), unique per profile, so importing the same
    export again adds nothing. Turns written by rheo itself have none."""
    run_script(
        conn,
        """
        ALTER TABLE turns ADD COLUMN source_key TEXT;
        CREATE UNIQUE INDEX turns_source_key ON turns(profile, source_key)
        WHERE source_key IS NOT NULL;
        """,
    )


PURGEABLE_TRIGGERS = {
    "turns_no_update": "BEFORE UPDATE ON turns",
    "turns_no_delete": "BEFORE DELETE ON turns",
    "memory_events_no_update": "BEFORE UPDATE ON memory_events",
    "memory_events_no_delete": "BEFORE DELETE ON memory_events",
    "digests_no_update": "BEFORE UPDATE ON digests",
    "digests_no_delete": "BEFORE DELETE ON digests",
    "memory_items_content_fixed": "BEFORE UPDATE OF profile, category, topic, label, "
    "properties, content_key, source_turn_id, created_at ON memory_items",
    "memory_items_no_delete": "BEFORE DELETE ON memory_items",
}
"""The guards `rheo purge` may pass, with the event each fires on."""


def m009_purge(conn: sqlite3.Connection) -> None:
    """The one deliberate erase (``rheo purge``): the guards that keep the ledger, digests and
    memory history append-only stand aside only while a row in ``purge_grant`` exists — only
    ever inside the purge's own transaction, which also writes a ``purges`` tombstone (what
    and when, never the content). Tombstones themselves are append-only."""
    script = """
        CREATE TABLE purge_grant (on_ INTEGER PRIMARY KEY CHECK (on_ = 1), reason TEXT NOT NULL);
        CREATE TABLE purges (
            id      INTEGER PRIMARY KEY AUTOINCREMENT,
            profile TEXT NOT NULL,
            ts      TEXT NOT NULL,
            what    TEXT NOT NULL CHECK (what IN ('turn', 'session', 'memory', 'profile')),
            ref_id  INTEGER,
            counts  TEXT NOT NULL DEFAULT '{}'
        );
    """
    for name, event in PURGEABLE_TRIGGERS.items():
        message = {
            "turns": "the ledger is append-only: rows cannot be changed",
            "memory_events": "memory history is append-only: rows cannot be changed",
            "digests": "the digest log is append-only: rows cannot be changed",
            "memory_items": "memory item content is immutable: write a new item",
        }[name.rsplit("_no_", 1)[0].removesuffix("_content_fixed")]
        if name.endswith("no_delete"):
            message = message.replace("changed", "deleted")
        if name == "memory_items_no_delete":
            message = "memory items are never deleted: retract them"
        script += f"""
        DROP TRIGGER {name};
        CREATE TRIGGER {name} {event}
        WHEN NOT EXISTS (SELECT 1 FROM purge_grant)
        BEGIN SELECT RAISE(ABORT, '{message}'); END;
        """
    script += _append_only("purges", "the purge log")
    run_script(conn, script)


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


MIGRATIONS: list[Migration] = [
    m001_ledger,
    m002_memory,
    m003_job_leases,
    m004_trigram_index,
    m005_deferred_indexing,
    m006_no_replace,
    m007_knowledge_base,
    m008_source_keys,
    m009_purge,
    m010_assistant_scope,
    m011_tenant_in_word_index,
]
"""Every migration, in order; ``PRAGMA user_version`` is the count applied."""

SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    """The number of migrations applied to this database (``PRAGMA user_version``)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def refuse_newer(conn: sqlite3.Connection) -> None:
    """Raise StoreError if the database was written by a newer rheo (a higher schema
    version than `SCHEMA_VERSION`); reads only."""
    current = schema_version(conn)
    if current > SCHEMA_VERSION:
        raise StoreError(
            f"the database has schema version {current}, newer than this rheo "
            f"({SCHEMA_VERSION}); upgrade rheo to use it (it was left untouched)"
        )


def migrate(conn: sqlite3.Connection, *, target: int = SCHEMA_VERSION) -> list[str]:
    """Apply pending migrations up to ``target``; return the names applied (maybe none).

    Raises StoreError if the database is newer than this rheo knows.
    """
    applied: list[str] = []
    refuse_newer(conn)
    current = schema_version(conn)
    while current < target:
        conn.execute("BEGIN IMMEDIATE")
        try:
            current = schema_version(conn)  # another process may have migrated meanwhile
            if current >= target:
                conn.execute("COMMIT")
                break
            step = MIGRATIONS[current]
            step(conn)
            conn.execute(
                "INSERT INTO schema_migrations(version, name, applied_at) VALUES (?, ?, ?)",
                (current + 1, step.__name__, datetime.now(UTC).isoformat(timespec="seconds")),
            )
            conn.execute(f"PRAGMA user_version = {current + 1}")
            crash.reach("migrate.step")
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        applied.append(step.__name__)
        current += 1
    return applied
