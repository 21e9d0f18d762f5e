"""Opening rheo's SQLite store: pragmas, private permissions, migrations on open.

One file holds every profile; every query in the engine is scoped by profile. The connection
runs in autocommit mode and writers take ``BEGIN IMMEDIATE`` (see `write`), so two processes
appending at once queue on the busy timeout instead of failing with "database is locked".
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import cast

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
        if "readonly" in str(exc).lower():  # e.g. its folder: the -wal/-shm files cannot be made
            reader = _open_read_only(db_path, migrate_schema)
            if reader is not None:
                return reader
            raise StoreError(
                f"cannot open {db_path}: it or its folder is read-only ({exc})"
            ) from exc
        if "disk i/o" in str(exc).lower() and "SHORT_READ" in str(
            getattr(exc, "sqlite_errorname", "")
        ):
            raise StoreError(
                f"cannot read {db_path}: {exc} ({exc.sqlite_errorname}): its -wal file was "
                "removed while another rheo had it open, or the disk is failing"
            ) from exc
        raise StoreError(f"{db_path} is not a usable rheo database: {exc}") from exc
    except StoreError:
        conn.close()
        raise
    return conn


def _open_read_only(db_path: Path, migrate_schema: bool) -> sqlite3.Connection | None:
    """The store opened read-only, when its folder is read-only (SQLite cannot make the
    -wal and -shm files a WAL database needs even to be read): reading commands still read
    it, and every write fails as on a read-only file ("attempt to write a readonly
    database"). With no -wal file holding anything, nobody can be writing it (a writer
    would need one), so it is opened immutable; with one, only if SQLite can read it as it
    is. None when it cannot be read, or needs a migration rheo cannot write
    (``migrate_schema``)."""
    from .migrations import SCHEMA_VERSION, schema_version

    uri = db_path.resolve().as_uri()
    wal = Path(f"{db_path}-wal")
    try:
        pending = wal.exists() and wal.stat().st_size > 0
    except OSError:
        pending = True
    for query in ("mode=ro",) if pending else ("mode=ro", "mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(
                f"{uri}?{query}",
                uri=True,
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,
                check_same_thread=False,
            )
        except sqlite3.Error:
            continue
        try:
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            refuse_newer(conn)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            if migrate_schema and schema_version(conn) < SCHEMA_VERSION:
                conn.close()
                return None
            conn.execute("PRAGMA foreign_keys = ON")
            return conn
        except sqlite3.DatabaseError:
            conn.close()
        except StoreError:
            conn.close()
            raise
    return None


def wal_identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """The device and inode of the store's -wal file, or None when there is none."""
    try:
        st = os.stat(f"{os.fspath(path)}-wal")
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def checkpoint_lost_wal(
    conn: sqlite3.Connection, path: str | os.PathLike[str], known: tuple[int, int] | None
) -> bool:
    """True when the store open on ``conn`` at ``path`` lost the -wal file it opened
    (``known``, from `wal_identity` at opening: removed under this process, which writes on
    to the removed file, unseen by others, or replaced by another process's new one) and its
    content was just put back into the database file by a checkpoint: the caller then
    closes the connection and opens the store again. False otherwise (one stat)."""
    if known is None or wal_identity(path) == known:
        return False
    try:
        if str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            return False  # opened read-only without one
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error:
        return False
    return True


def open_url(url: str, *, tenant: str, migrate_schema: bool = True) -> sqlite3.Connection:
    """Open the PostgreSQL store at ``url`` (``postgresql://...``) bound to ``tenant`` (a
    profile name from configuration), migrated; see `pg.connect`. The connection has the
    sqlite3 surface the engine uses (typed as one). Raises StoreError when psycopg is missing
    or the server cannot be reached."""
    from . import pg

    return cast(sqlite3.Connection, pg.connect(url, tenant, migrate_schema=migrate_schema))


def ensure_private_dir(folder: Path) -> None:
    """Create ``folder`` (and parents) if missing; a folder rheo creates is mode 0700."""
    if folder.exists():
        return
    old_umask = os.umask(0o077)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    finally:
        os.umask(old_umask)


LOCK_ATTEMPTS = 4
"""Tries at taking the write lock; each waits up to `BUSY_TIMEOUT_S` for another process."""

_savepoints = itertools.count(1)


def _begin(conn: sqlite3.Connection, attempts: int) -> None:
    """``BEGIN IMMEDIATE``, tried again while another process holds the lock past the busy
    timeout (SQLITE_BUSY / SQLITE_LOCKED). Raises the last OperationalError after
    ``attempts`` tries."""
    for attempt in range(attempts):
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            code = getattr(exc, "sqlite_errorcode", None)
            busy = code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
            if not busy or attempt == attempts - 1:
                raise


def _undo(conn: sqlite3.Connection, *statements: str) -> None:
    """Run rollback statements without letting their own failure hide the error that caused
    them (a failed ROLLBACK leaves SQLite to roll back when the connection closes)."""
    for statement in statements:
        with contextlib.suppress(sqlite3.Error):
            conn.execute(statement)


@contextlib.contextmanager
def write(
    conn: sqlite3.Connection, *, attempts: int = LOCK_ATTEMPTS
) -> Iterator[sqlite3.Connection]:
    """A write transaction: ``BEGIN IMMEDIATE`` ... ``COMMIT``, rolled back on any exception.

    IMMEDIATE takes the write lock up front, so read-then-write sequences (session detection,
    reinforcement) cannot interleave with another process's; while another process holds the
    lock the begin is tried ``attempts`` times (each waits the busy timeout). Nested use opens
    a SAVEPOINT inside the outer transaction: an exception undoes only the inner block's
    writes, and the outer transaction decides what is committed. The original exception is
    always the one raised, never an error from the rollback.
    """
    if conn.in_transaction:
        name = f"rheo_{next(_savepoints)}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            _undo(conn, f"ROLLBACK TO {name}", f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    _begin(conn, attempts)
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            _undo(conn, "ROLLBACK")
        raise


@contextlib.contextmanager
def tentative(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """A write transaction that is always rolled back: what the writes inside it would do is
    visible inside, and nothing of it outside, ever (``rheo context`` stores the message this
    way to build exactly the request ``rheo ask`` would send). Raises RuntimeError inside
    another transaction, whose writes it would discard.
    """
    if conn.in_transaction:
        raise RuntimeError("a tentative write cannot run inside another transaction")
    _begin(conn, LOCK_ATTEMPTS)
    try:
        yield conn
    finally:
        _undo(conn, "ROLLBACK")
