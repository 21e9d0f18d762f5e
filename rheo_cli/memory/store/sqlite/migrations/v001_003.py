"""Schema versions 1 to 3: the ledger (sessions, append-only turns, FTS5), memory items and
their events, digests, and the background job queue with leases."""

from __future__ import annotations

import sqlite3

from .script import append_only, run_script


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
        + append_only("turns", "the ledger"),
    )


# m002_memory's script in four parts, run joined in this order. Existing databases were made
# with it: not a byte of a statement, nor their order, may change.

_MEMORY_ITEMS = """
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
"""
"""Memory items: the table, its indexes, the triggers that keep an item's content fixed and
rows undeleted, and its FTS5 index (filled on insert)."""


_MEMORY_EVENTS = """
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
"""
"""Memory events: each item's history (append-only, see `m002_memory`)."""


_DIGESTS = """
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
"""
"""Session digests: one per session, and their FTS5 index (filled on insert)."""


_JOBS = """
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
"""The background job queue: one job per kind and row it is about."""


def m002_memory(conn: sqlite3.Connection) -> None:
    """Memory items and their event history, session digests and the background job queue.

    Item content (topic, label, properties) is immutable once written: a changed fact is a new
    item that supersedes the old one (Rheo article §05). Items are never deleted; events, like
    turns,
    are append-only.
    """
    run_script(
        conn,
        _MEMORY_ITEMS
        + _MEMORY_EVENTS
        + _DIGESTS
        + _JOBS
        + append_only("memory_events", "memory history")
        + append_only("digests", "the digest log"),
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
