"""Versioned schema migrations, applied in order when the store is opened.

Each migration is a small function ``mNNN_name(conn)`` in the module of its group of
versions (`v001_003`, `v004_006`, ...); `MIGRATIONS` lists them in order and ``PRAGMA
user_version`` records how many have run (also logged in ``schema_migrations`` under the
function's name). A new database and an old one take the same path, one step at a time, each
step in its own ``BEGIN IMMEDIATE`` transaction so two processes opening the store at once
cannot both apply it. Never edit a migration that has shipped: add a new one (in a new module
once the last one holds three).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime

from ... import crash
from ...errors import NewerStore
from .v001_003 import m001_ledger, m002_memory, m003_job_leases
from .v004_006 import CJK_GLOB, m004_trigram_index, m005_deferred_indexing, m006_no_replace
from .v007_009 import m007_knowledge_base, m008_source_keys, m009_purge
from .v010_011 import m010_assistant_scope, m011_tenant_in_word_index
from .v012_014 import m012_profile_counters, m013_purge_keys, m014_memory_windows

__all__ = [
    "CJK_GLOB",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Migration",
    "migrate",
    "refuse_newer",
    "schema_version",
]

Migration = Callable[[sqlite3.Connection], None]


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
    m012_profile_counters,
    m013_purge_keys,
    m014_memory_windows,
]
"""Every migration, in order; ``PRAGMA user_version`` is the count applied."""

SCHEMA_VERSION = len(MIGRATIONS)


def schema_version(conn: sqlite3.Connection) -> int:
    """The number of migrations applied to this database (``PRAGMA user_version``)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def refuse_newer(conn: sqlite3.Connection) -> None:
    """Raise NewerStore (a StoreError) if the database was written by a newer rheo (a higher
    schema version than `SCHEMA_VERSION`); reads only."""
    current = schema_version(conn)
    if current > SCHEMA_VERSION:
        raise NewerStore(
            f"the database has schema version {current}, newer than this rheo "
            f"({SCHEMA_VERSION}); upgrade rheo to use it (it was left untouched)"
        )


def migrate(conn: sqlite3.Connection, *, target: int = SCHEMA_VERSION) -> list[str]:
    """Apply pending migrations up to ``target``; return the names applied (maybe none).

    Raises NewerStore (a StoreError) if the database is newer than this rheo knows.
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
