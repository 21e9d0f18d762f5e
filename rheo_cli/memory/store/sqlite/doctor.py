"""``rheo doctor`` on the SQLite file: the store's own checks, one line each, and repairs.

Checks: the schema version, SQLite's integrity check, whether the file can be written, the
tables every store has, every FTS5 index against its table. Repairs (``--repair``) migrate
an older schema, make a dropped table again (sessions from the turns that name them, others
empty) and rebuild the search indexes from their tables — never a row of the ledger. The
engine's own checks (sessions' counters, jobs) are the front end's, on every store.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ..api import Check, Health
from . import health
from .connection import SqliteConnection
from .migrations import SCHEMA_VERSION, migrate, schema_version


def _why(exc: BaseException) -> str:
    """One line for a failure while checking."""
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def read_only_detail(db_file: Path, why: str) -> str:
    """What a read-only store is and what to do about it, in one line."""
    if db_file.exists() and not os.access(db_file, os.W_OK):
        mode = stat.S_IMODE(db_file.stat().st_mode)
        cause = f"the file is read-only (mode {mode:04o}): 'chmod 600 {db_file}'"
    elif not os.access(db_file.parent, os.W_OK):
        cause = f"its folder is read-only: 'chmod 700 {db_file.parent}'"
    else:
        cause = f"SQLite says: {why} (a read-only mount?)"
    return (
        f"{db_file} cannot be written, so nothing is stored; {cause} (the search indexes "
        "are not checked: their check writes)"
    )


def checks(conn: SqliteConnection, db_file: Path, *, repair: bool) -> Health:
    """The SQLite store's checks (see the module docstring); ``usable`` is False when a
    table is missing (the engine's checks would fail on it)."""
    found = Health()
    version = schema_version(conn)
    if repair and version < SCHEMA_VERSION:
        try:
            migrate(conn)
            found.repaired.append(f"schema upgraded from version {version} to {SCHEMA_VERSION}")
            version = schema_version(conn)
        except Exception as exc:  # noqa: BLE001 - reported as the check's detail
            found.repaired.append(f"schema upgrade failed: {exc}")
    if version > SCHEMA_VERSION:
        detail = f"version {version} is newer than this rheo ({SCHEMA_VERSION}): upgrade rheo"
    elif version < SCHEMA_VERSION:
        detail = f"version {version} of {SCHEMA_VERSION}: any rheo command upgrades it"
    else:
        detail = f"version {version}"
    found.checks.append(Check("schema", version == SCHEMA_VERSION, detail))

    problems = [" ".join(p.split()) for p in health.integrity_problems(conn)]
    detail = "; ".join(problems)[:600]
    if problems:
        detail += (
            f" (the file is damaged: keep a copy of it; 'sqlite3 {db_file} .recover' "
            "saves what can still be read)"
        )
    found.checks.append(Check("integrity", not problems, detail or "ok"))

    unwritable = health.read_only(conn)
    if unwritable is not None:
        found.checks.append(Check("writable", False, read_only_detail(db_file, unwritable)))

    missing = [t for t in health.missing_tables(conn) if t not in health.FTS_INDEXES]
    if repair and missing and unwritable is None:
        try:
            for name in health.recreate_tables(conn, missing):
                held = (
                    "from the turns that name them"
                    if name == "sessions"
                    else "empty: what it held is gone"
                )
                found.repaired.append(f"made the missing table {name} again, {held}")
        except health.DAMAGE as exc:
            found.repaired.append(f"could not make the missing tables again: {_why(exc)}")
        missing = [t for t in health.missing_tables(conn) if t not in health.FTS_INDEXES]
    found.checks.append(
        Check("tables", not missing, f"missing: {', '.join(missing)}" if missing else "all present")
    )

    # FTS5's integrity check is a write: on a read-only store it would only say so again,
    # and nothing can be repaired.
    if unwritable is None:
        if repair:
            broken = health.fts_problems(conn)
            if broken:
                try:
                    health.rebuild_indexes(conn, list(broken))
                    found.repaired.append(f"rebuilt {', '.join(broken)} from their tables")
                except Exception as exc:  # noqa: BLE001 - reported below
                    found.repaired.append(f"could not rebuild the search indexes: {_why(exc)}")
        fts = health.fts_problems(conn)
        found.checks.append(
            Check(
                "search indexes",
                not fts,
                "; ".join(f"{k}: {v}" for k, v in fts.items()) or "consistent with their tables",
            )
        )
    found.usable = not missing
    found.writable = unwritable is None
    return found
