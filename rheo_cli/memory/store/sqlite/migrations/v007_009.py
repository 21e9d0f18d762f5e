"""Schema versions 7 to 9: the knowledge base, source keys of imported turns, and the one
deliberate erase (``rheo purge``) with its tombstones."""

from __future__ import annotations

import sqlite3

from .script import append_only, run_script


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
    script += append_only("purges", "the purge log")
    run_script(conn, script)
