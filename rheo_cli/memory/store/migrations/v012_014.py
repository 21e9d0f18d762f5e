"""Schema version 12: per-profile counters — stable session numbers and the memory
generation the hot cache is checked against; 13: the content keys of what a purge erased."""

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


def m013_purge_keys(conn: sqlite3.Connection) -> None:
    """Each purge tombstone lists the content keys (`archive.keys`: truncated SHA-256 digests,
    never the text) of the records it erased, so an import of an export made before the purge
    can recognise them and leave them out instead of bringing the text back. Tombstones from
    before have none (``[]``)."""
    run_script(conn, "ALTER TABLE purges ADD COLUMN keys TEXT NOT NULL DEFAULT '[]';")
