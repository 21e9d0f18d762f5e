"""Opening rheo's SQLite store: pragmas, private permissions, migrations on open.

One file holds every profile; every query in the engine is scoped by profile. The connection
runs in autocommit mode and writers take ``BEGIN IMMEDIATE`` (see `write`), so two processes
appending at once queue on the busy timeout instead of failing with "database is locked".
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from .errors import StoreError
from .migrations import migrate, refuse_newer

BUSY_TIMEOUT_S = 30.0
"""How long (seconds) a connection waits for another process's write lock before failing."""


def open_store(path: str | os.PathLike[str], *, migrate_schema: bool = True) -> sqlite3.Connection:
    """Open (creating if needed) the database at ``path`` and bring its schema up to date.

    The folder is created 0700 and the file 0600 (SQLite gives its -wal and -shm files the
    database file's mode). Pragmas: WAL journal, ``synchronous=FULL`` (a committed turn
    survives a crash or kill), foreign keys on, busy timeout `BUSY_TIMEOUT_S`.
    Returns a connection in autocommit mode with ``sqlite3.Row`` rows.
    Raises StoreError when the file cannot be opened, is not a database, or was written by
    a newer rheo.
    """
    db_path = Path(path)
    try:
        ensure_private_dir(db_path.parent)
        if not db_path.exists():
            old_umask = os.umask(0o077)
            try:
                db_path.touch(mode=0o600, exist_ok=True)
            finally:
                os.umask(old_umask)
        conn = sqlite3.connect(
            db_path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
        )
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"cannot open the database {db_path}: {exc}") from exc
    conn.row_factory = sqlite3.Row
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        # Before anything that could write (the journal mode is in the file's header): a
        # database from a newer rheo is left byte for byte as it was.
        refuse_newer(conn)
        mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if mode.lower() != "wal":
            raise StoreError(f"cannot switch {db_path} to WAL mode (got {mode})")
        conn.execute("PRAGMA synchronous = FULL")
        conn.execute("PRAGMA foreign_keys = ON")
        # REPLACE deletes the old row: with recursive triggers that delete meets the
        # append-only triggers too, so INSERT OR REPLACE cannot rewrite the ledger.
        conn.execute("PRAGMA recursive_triggers = ON")
        if migrate_schema:
            migrate(conn)
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreError(f"{db_path} is not a usable rheo database: {exc}") from exc
    except StoreError:
        conn.close()
        raise
    return conn


def ensure_private_dir(folder: Path) -> None:
    """Create ``folder`` (and parents) if missing; a folder rheo creates is mode 0700."""
    if folder.exists():
        return
    old_umask = os.umask(0o077)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    finally:
        os.umask(old_umask)


@contextlib.contextmanager
def write(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction: ``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any exception.

    IMMEDIATE takes the write lock up front, so read-then-write sequences (session detection,
    reinforcement) cannot interleave with another process's. Nested use joins the outer
    transaction.
    """
    if conn.in_transaction:
        yield conn
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:  # SQLite may have rolled back already (e.g. SQLITE_CORRUPT)
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
