"""Schema version 12: per-profile counters — stable session numbers and the memory
generation the hot cache is checked against; 13: the content keys of what a purge erased;
14: validity windows of facts, and consolidation jobs that stop after failing alike."""

from __future__ import annotations

import sqlite3

from .script import run_script

PROFILE_COUNTERS = """
    CREATE TABLE profile_counters (
        profile           TEXT PRIMARY KEY,
        sessions_opened   INTEGER NOT NULL DEFAULT 0,
        memory_generation INTEGER NOT NULL DEFAULT 0,
        epoch             TEXT NOT NULL DEFAULT (lower(hex(randomblob(8))))
    );
    ALTER TABLE sessions ADD COLUMN number INTEGER;
    UPDATE sessions SET number = numbered.n
    FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY profile ORDER BY id) AS n FROM sessions)
        AS numbered
    WHERE sessions.id = numbered.id;
    INSERT INTO profile_counters(profile, sessions_opened)
    SELECT profile, max(number) FROM sessions GROUP BY profile;
    INSERT OR IGNORE INTO profile_counters(profile) SELECT DISTINCT profile FROM memory_items;
    CREATE UNIQUE INDEX sessions_number ON sessions(profile, number);
    CREATE TRIGGER sessions_numbered AFTER INSERT ON sessions WHEN new.number IS NULL
    BEGIN
        INSERT INTO profile_counters(profile, sessions_opened) VALUES (new.profile, 1)
            ON CONFLICT(profile) DO UPDATE SET sessions_opened = sessions_opened + 1;
        UPDATE sessions SET number = (SELECT sessions_opened FROM profile_counters
                                      WHERE profile = new.profile)
        WHERE id = new.id;
    END;
    CREATE TRIGGER memory_items_generation_insert AFTER INSERT ON memory_items
    BEGIN
        INSERT INTO profile_counters(profile, memory_generation) VALUES (new.profile, 1)
            ON CONFLICT(profile) DO UPDATE SET memory_generation = memory_generation + 1;
    END;
    CREATE TRIGGER memory_items_generation_update AFTER UPDATE ON memory_items
    BEGIN
        INSERT INTO profile_counters(profile, memory_generation) VALUES (new.profile, 1)
            ON CONFLICT(profile) DO UPDATE SET memory_generation = memory_generation + 1;
    END;
    CREATE TRIGGER memory_items_generation_delete AFTER DELETE ON memory_items
    BEGIN
        INSERT INTO profile_counters(profile, memory_generation) VALUES (old.profile, 1)
            ON CONFLICT(profile) DO UPDATE SET memory_generation = memory_generation + 1;
    END;
"""


def m012_profile_counters(conn: sqlite3.Connection) -> None:
    """Per-profile counters kept by triggers, so no writer can forget them.

    ``sessions.number`` is the number a person sees (``s3``): given when the session is
    opened (``sessions_opened`` + 1) and never recomputed, so purging a session leaves a gap
    instead of renumbering the later ones. Existing sessions keep the numbers they were shown
    (1, 2, 3... by id within the profile).

    ``memory_generation`` goes up with every insert, update or delete of a memory item (a
    purge included), in the writer's own transaction; ``epoch`` is random per store and
    profile. A hot-cache entry records both and is used only while they still match the
    store, so a change whose cache invalidation never reached the cache is still never
    served stale. A profile purge leaves the row (numbers and no content), so neither counter
    ever goes back."""
    run_script(conn, PROFILE_COUNTERS)


ORPHANS = """
    CREATE TEMP TABLE rheo_orphans AS
    SELECT m.id, m.profile, (
        SELECT n.id FROM memory_items n WHERE n.profile = m.profile AND n.topic = m.topic
        AND n.assistant IS m.assistant AND n.status = 'active' AND n.id > m.id
        ORDER BY n.id DESC LIMIT 1) AS successor
    FROM memory_items m WHERE m.status = 'superseded' AND m.superseded_by IS NULL;
    UPDATE memory_items SET superseded_by = (
        SELECT successor FROM rheo_orphans o WHERE o.id = memory_items.id)
    WHERE id IN (SELECT id FROM rheo_orphans WHERE successor IS NOT NULL);
    UPDATE memory_items SET status = 'active'
    WHERE id IN (SELECT id FROM rheo_orphans WHERE successor IS NULL);
    INSERT INTO memory_events(item_id, profile, ts, kind, cause, related_item_id, data)
    SELECT id, profile, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
        CASE WHEN successor IS NULL THEN 'reopened' ELSE 'superseded' END,
        CASE WHEN successor IS NULL
            THEN 'restored: the statement that replaced it had been purged'
            ELSE 'replaced by #' || successor || ', the newest fact on its topic (the '
                 || 'statement that replaced it before had been purged)' END,
        successor, '{}'
    FROM rheo_orphans ORDER BY id;
    DROP TABLE rheo_orphans;
"""


def m013_purge_keys(conn: sqlite3.Connection) -> None:
    """Each purge tombstone lists the content keys (`archive.keys`: truncated SHA-256 digests,
    never the text) of the records it erased, so an import of an export made before the purge
    can recognise them and leave them out instead of bringing the text back. Tombstones from
    before have none (``[]``).

    And the facts earlier purges left behind are given back: a purge used to erase the
    statement that replaced a fact and leave the fact ``superseded`` by nothing, out of every
    view. Each such fact is replaced by the newest active fact on its topic in its scope
    (shared or the same assistant's) made after it, or, with none, is active again; an event
    says which."""
    run_script(conn, "ALTER TABLE purges ADD COLUMN keys TEXT NOT NULL DEFAULT '[]';" + ORPHANS)


MEMORY_WINDOWS = """
    ALTER TABLE memory_items ADD COLUMN valid_from TEXT;
    ALTER TABLE memory_items ADD COLUMN valid_until TEXT;
    DROP TRIGGER memory_items_content_fixed;
    CREATE TRIGGER memory_items_content_fixed BEFORE UPDATE OF
        profile, category, topic, label, properties, content_key, source_turn_id,
        created_at, valid_from, valid_until ON memory_items
    BEGIN SELECT RAISE(ABORT, 'memory item content is immutable: write a new item'); END;
    CREATE TABLE jobs_v14 (
        id             INTEGER PRIMARY KEY AUTOINCREMENT,
        profile        TEXT NOT NULL,
        kind           TEXT NOT NULL CHECK (kind IN ('extract', 'digest', 'consolidate')),
        ref_id         INTEGER NOT NULL,
        status         TEXT NOT NULL DEFAULT 'pending'
                           CHECK (status IN ('pending', 'running', 'done', 'failed')),
        attempts       INTEGER NOT NULL DEFAULT 0,
        last_error     TEXT,
        lease_until    REAL,
        not_before     REAL,
        created_at     TEXT NOT NULL,
        updated_at     TEXT NOT NULL,
        leased_by      TEXT,
        notes          TEXT NOT NULL DEFAULT '[]',
        failures_alike INTEGER NOT NULL DEFAULT 0,
        UNIQUE (kind, ref_id)
    );
    INSERT INTO jobs_v14(id, profile, kind, ref_id, status, attempts, last_error, lease_until,
        not_before, created_at, updated_at, leased_by, notes, failures_alike)
    SELECT id, profile, kind, ref_id, status, attempts, last_error, lease_until, not_before,
        created_at, updated_at, leased_by, notes,
        CASE WHEN last_error IS NULL THEN 0 ELSE 1 END
    FROM jobs ORDER BY id;
    DROP TABLE jobs;
    ALTER TABLE jobs_v14 RENAME TO jobs;
    CREATE INDEX jobs_status ON jobs(status, id);
    CREATE INDEX jobs_ref ON jobs(profile, kind, ref_id);
"""


def m014_memory_windows(conn: sqlite3.Connection) -> None:
    """Facts with a validity window, and a queue that gives up on a job failing alike.

    ``valid_from`` / ``valid_until`` (stored UTC text, NULL: open) say when a fact holds ("I'm
    in Paris until Friday"): past its window a fact leaves CURRENT MEMORY but is kept, listed
    as expired. Like the rest of an item's content they never change (a new window is a new
    item). Existing items have no window.

    The job queue takes a third kind, ``consolidate`` (a model reviews the profile's facts for
    duplicates and stale ones), and counts ``failures_alike``: how many failed attempts in a
    row ended with the same error, so a job failing the same way stops being retried sooner
    (`jobs.fail`). The table is rebuilt to widen its kind check (SQLite cannot alter one);
    every row, id and index is kept."""
    run_script(conn, MEMORY_WINDOWS)
