"""``rheo doctor``'s checks of the SQLite store, and ``--repair``.

Checks: the database opens and its schema version, SQLite's integrity check, that the file
can be written, missing tables, every FTS5 index against its table, the sessions' counters
against their turns, pending and failed jobs. Repairs never change a row of the ledger: the
schema is upgraded, dropped tables made again, indexes rebuilt from their tables, sessions
recounted, missing digests queued. The store is opened without migrating it, and closed.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

from ...memory.store import db, health
from ...memory.store.errors import StoreError
from ...memory.store.migrations import SCHEMA_VERSION, migrate, schema_version
from .checks import Check, guarded, jobs_check, queue_missing_digests, session_check, why


def checks(db_file: Path, repair: bool, repaired: list[str], gap_s: float) -> list[Check]:
    """The checks of the SQLite store at ``db_file`` (after repairs when ``repair``, each
    noted in ``repaired``; ``gap_s``: the session gap, seconds, for missing digests). A file
    not created yet is healthy; one that cannot be opened is one problem. A damaged page
    makes the checks that read it problems, never stops the list; sqlite3.Error from reading
    the schema version itself propagates."""
    if not db_file.exists():
        return [Check("database", True, f"{db_file} not created yet")]
    try:
        conn = db.open_store(db_file, migrate_schema=False)
    except StoreError as exc:
        return [Check("database", False, str(exc))]
    try:
        return _store_checks(conn, db_file, repair, repaired, gap_s)
    finally:
        conn.close()


def _store_checks(
    conn: sqlite3.Connection, db_file: Path, repair: bool, repaired: list[str], gap_s: float
) -> list[Check]:
    found = [_schema_check(conn, repair, repaired), _integrity_check(conn, db_file)]
    unwritable = health.read_only(conn)
    if unwritable is not None:
        found.append(Check("writable", False, _read_only_detail(db_file, unwritable)))
        # Nothing can be repaired; FTS5's integrity check is a write: on a read-only store
        # it would only say so again.
        repair = False
    missing = _missing_tables(conn)
    if repair and missing:
        _recreate_tables(conn, missing, repaired)
        missing = _missing_tables(conn)
    found.append(
        Check("tables", not missing, f"missing: {', '.join(missing)}" if missing else "all present")
    )
    if unwritable is None:
        found.append(_index_check(conn, repair, repaired))
    if not missing:
        found.append(guarded("sessions", lambda: session_check(conn, None, repair, repaired)))
        if repair:
            _queue_digests(conn, gap_s, repaired)
        found.append(guarded("jobs", lambda: jobs_check(conn)))
    return found


def _schema_check(conn: sqlite3.Connection, repair: bool, repaired: list[str]) -> Check:
    """The schema's version against this rheo's; ``repair`` upgrades an older one."""
    version = schema_version(conn)
    if repair and version < SCHEMA_VERSION:
        try:
            migrate(conn)
            repaired.append(f"schema upgraded from version {version} to {SCHEMA_VERSION}")
            version = schema_version(conn)
        except Exception as exc:  # noqa: BLE001 - reported as the check's detail
            repaired.append(f"schema upgrade failed: {exc}")
    if version > SCHEMA_VERSION:
        detail = f"version {version} is newer than this rheo ({SCHEMA_VERSION}): upgrade rheo"
    elif version < SCHEMA_VERSION:
        detail = f"version {version} of {SCHEMA_VERSION}: any rheo command upgrades it"
    else:
        detail = f"version {version}"
    return Check("schema", version == SCHEMA_VERSION, detail)


def _integrity_check(conn: sqlite3.Connection, db_file: Path) -> Check:
    """SQLite's integrity check (at most 600 characters of its findings)."""
    problems = [" ".join(p.split()) for p in health.integrity_problems(conn)]
    detail = "; ".join(problems)[:600]
    if problems:
        detail += (
            f" (the file is damaged: keep a copy of it; 'sqlite3 {db_file} .recover' "
            "saves what can still be read)"
        )
    return Check("integrity", not problems, detail or "ok")


def _missing_tables(conn: sqlite3.Connection) -> list[str]:
    """The plain tables (not search indexes) this store lacks."""
    return [t for t in health.missing_tables(conn) if t not in health.FTS_INDEXES]


def _recreate_tables(conn: sqlite3.Connection, missing: list[str], repaired: list[str]) -> None:
    """Make the ``missing`` tables again (sessions from the turns that name them, others
    empty), each noted in ``repaired``; a failure is noted, never raised."""
    try:
        for name in health.recreate_tables(conn, missing):
            held = (
                "from the turns that name them"
                if name == "sessions"
                else "empty: what it held is gone"
            )
            repaired.append(f"made the missing table {name} again, {held}")
    except (sqlite3.Error, MemoryError) as exc:
        repaired.append(f"could not make the missing tables again: {why(exc)}")


def _index_check(conn: sqlite3.Connection, repair: bool, repaired: list[str]) -> Check:
    """Every FTS5 index against its table; ``repair`` rebuilds the inconsistent ones first."""
    if repair and (broken := health.fts_problems(conn)):
        try:
            health.rebuild_indexes(conn, list(broken))
            repaired.append(f"rebuilt {', '.join(broken)} from their tables")
        except Exception as exc:  # noqa: BLE001 - reported below
            repaired.append(f"could not rebuild the search indexes: {why(exc)}")
    fts = health.fts_problems(conn)
    detail = "; ".join(f"{k}: {v}" for k, v in fts.items())
    return Check("search indexes", not fts, detail or "consistent with their tables")


def _queue_digests(conn: sqlite3.Connection, gap_s: float, repaired: list[str]) -> None:
    """Queue the missing digests, noted in ``repaired`` (a failure too, never raised)."""
    try:
        if queued := queue_missing_digests(conn, gap_s):
            repaired.append(f"queued {queued} missing digest(s)")
    except (sqlite3.Error, MemoryError) as exc:
        repaired.append(f"could not queue missing digests: {why(exc)}")


def _read_only_detail(db_file: Path, reason: str) -> str:
    """What a read-only store is and what to do about it, in one line."""
    if db_file.exists() and not os.access(db_file, os.W_OK):
        mode = stat.S_IMODE(db_file.stat().st_mode)
        cause = f"the file is read-only (mode {mode:04o}): 'chmod 600 {db_file}'"
    elif not os.access(db_file.parent, os.W_OK):
        cause = f"its folder is read-only: 'chmod 700 {db_file.parent}'"
    else:
        cause = f"SQLite says: {reason} (a read-only mount?)"
    return (
        f"{db_file} cannot be written, so nothing is stored; {cause} (the search indexes "
        "are not checked: their check writes)"
    )
