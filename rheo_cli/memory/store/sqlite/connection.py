"""Opening rheo's SQLite file: pragmas, private permissions, migrations on open, and the
connection the engine is given, which says SQLite's failures as rheo's errors.

One file holds every profile; every query in the engine is scoped by profile. The connection
runs in autocommit mode and writers take ``BEGIN IMMEDIATE`` (`SqliteStore.write`), so two
processes appending at once queue on the busy timeout instead of failing with "database is
locked".

`SqliteConnection` is the standard library's connection with its cursors' failures turned
into `errors.Busy`, `errors.Integrity`, `errors.Unavailable` or `errors.DatabaseError` (the
driver's words and error name kept): `sqlite3.Error` never leaves ``store/sqlite/``.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from .. import api
from ..errors import Busy, DatabaseError, Integrity, NotCreated, StoreError, Unavailable
from ..private_file import ensure_private_dir
from .migrations import migrate, refuse_newer

if TYPE_CHECKING:
    from . import SqliteStore

_BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
_UNAVAILABLE = (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL,
                sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM)  # fmt: skip


def translate(exc: sqlite3.Error, read_only_because: str | None = None) -> DatabaseError:
    """The rheo error saying ``exc``: its message as SQLite wrote it (with
    ``read_only_because`` after a refused write, when the store was opened read-only for a
    reason), its error name (``SQLITE_IOERR_SHORT_READ``) as ``code``."""
    code = str(getattr(exc, "sqlite_errorname", "") or "")
    primary = int(getattr(exc, "sqlite_errorcode", -1) or -1) & 0xFF
    message = str(exc)
    if read_only_because and primary == sqlite3.SQLITE_READONLY:
        message += f" ({read_only_because})"
    if isinstance(exc, sqlite3.IntegrityError):
        return Integrity(message, code=code)
    if primary in _BUSY:
        return Busy(message, code=code)
    if primary in _UNAVAILABLE:
        return Unavailable(message, code=code)
    return DatabaseError(message, code=code)


def error_code(exc: BaseException) -> str:
    """The SQLite error name of ``exc`` (a rheo error or SQLite's own), else ``""``."""
    return str(getattr(exc, "code", "") or getattr(exc, "sqlite_errorname", "") or "")


class SqliteCursor(sqlite3.Cursor):
    """A cursor whose failures are rheo's errors (see `translate`)."""

    def execute(self, sql: str, parameters: Any = (), /) -> SqliteCursor:
        try:
            super().execute(sql, parameters)
        except sqlite3.Error as exc:
            raise translate(exc, getattr(self.connection, "read_only_because", None)) from exc
        return self

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> SqliteCursor:
        try:
            super().executemany(sql, seq_of_parameters)
        except sqlite3.Error as exc:
            raise translate(exc, getattr(self.connection, "read_only_because", None)) from exc
        return self

    def fetchone(self) -> Any:
        try:
            return super().fetchone()
        except sqlite3.Error as exc:
            raise translate(exc) from exc

    def fetchall(self) -> list[Any]:
        try:
            return super().fetchall()
        except sqlite3.Error as exc:
            raise translate(exc) from exc

    def fetchmany(self, size: int | None = 1) -> list[Any]:
        try:
            return super().fetchmany(size)
        except sqlite3.Error as exc:
            raise translate(exc) from exc

    def __next__(self) -> Any:
        try:
            return super().__next__()
        except sqlite3.Error as exc:
            raise translate(exc) from exc


class SqliteConnection(sqlite3.Connection):
    """The standard library's connection, failing with rheo's errors, and knowing its
    `store` (the engine asks the store for what is not plain SQL)."""

    store: SqliteStore
    read_only_because: str | None = None
    """Why the store was opened read-only (its folder is read-only, the disk is full), said
    with every write it refuses; None when it was opened to write."""
    wait_s: float = api.BUSY_TIMEOUT_S
    """How long (seconds) a try at the write lock waits for another process's (SQLite's
    busy timeout, `set_wait`)."""

    def set_wait(self, seconds: float) -> None:
        """Wait ``seconds`` for another process's lock from now on (``busy_timeout``)."""
        self.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
        self.wait_s = seconds

    def cursor(self, factory: Any = SqliteCursor) -> SqliteCursor:  # type: ignore[override]
        return cast(SqliteCursor, super().cursor(factory))

    def execute(self, sql: str, parameters: Any = (), /) -> SqliteCursor:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, seq_of_parameters: Iterable[Any], /) -> SqliteCursor:
        return self.cursor().executemany(sql, seq_of_parameters)


def _connect(target: str | Path, **options: Any) -> SqliteConnection:
    return sqlite3.connect(
        target,
        timeout=api.BUSY_TIMEOUT_S,
        isolation_level=None,
        check_same_thread=False,
        factory=SqliteConnection,
        **options,
    )


def connect(
    path: str | os.PathLike[str], *, migrate_schema: bool = True, create: bool = True
) -> SqliteConnection:
    """Open (creating if needed, unless ``create`` is False) the database at ``path`` and
    bring its schema up to date.

    The folder is created 0700 and the file 0600 (SQLite gives its -wal and -shm files the
    database file's mode). Pragmas: WAL journal, ``synchronous=FULL`` (a committed turn
    survives a crash or kill), foreign keys on, busy timeout `api.BUSY_TIMEOUT_S`.
    Returns a connection in autocommit mode with ``sqlite3.Row`` rows.
    Raises NotCreated for a missing file with ``create`` False, StoreError when the file
    cannot be opened, is not a database, or was written by a newer rheo.
    """
    db_path = Path(path)
    if not create and not db_path.exists():
        raise NotCreated(f"{db_path} not created yet")
    try:
        ensure_private_dir(db_path.parent)
        if not db_path.exists():
            old_umask = os.umask(0o077)
            try:
                db_path.touch(mode=0o600, exist_ok=True)
            finally:
                os.umask(old_umask)
        conn = _connect(db_path)
    except (OSError, sqlite3.Error) as exc:
        raise StoreError(f"cannot open the database {db_path}: {exc}") from exc
    conn.row_factory = sqlite3.Row
    try:
        conn.set_wait(api.BUSY_TIMEOUT_S)
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
    except (DatabaseError, sqlite3.DatabaseError) as exc:
        conn.close()
        if "readonly" in str(exc).lower():  # e.g. its folder: the -wal/-shm files cannot be made
            reader = _open_read_only(db_path, migrate_schema)
            if reader is not None:
                reader.read_only_because = "the store or its folder is read-only"
                return reader
            raise StoreError(
                f"cannot open {db_path}: it or its folder is read-only ({exc})"
            ) from exc
        if "disk i/o" in str(exc).lower() and "SHORT_READ" in error_code(exc):
            raise StoreError(
                f"cannot read {db_path}: {exc} ({error_code(exc)}): its -wal file was "
                "removed while another rheo had it open, or the disk is failing"
            ) from exc
        if _no_room(exc):  # the -wal/-shm files cannot be made or grown: read what is there
            reader = _open_read_only(db_path, migrate_schema)
            if reader is not None:
                reader.read_only_because = f"the disk is full or failing: {exc}"
                return reader
        raise StoreError(f"{db_path} is not a usable rheo database: {exc}") from exc
    except StoreError:
        conn.close()
        raise
    return conn


def _no_room(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk refused to grow a file (full, over a size limit, or an
    I/O error while writing)."""
    words = str(exc).lower()
    return "disk is full" in words or "disk i/o" in words or "SQLITE_FULL" in error_code(exc)


def _open_read_only(db_path: Path, migrate_schema: bool) -> SqliteConnection | None:
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
            conn = _connect(f"{uri}?{query}", uri=True)
        except sqlite3.Error:
            continue
        try:
            conn.row_factory = sqlite3.Row
            conn.set_wait(api.BUSY_TIMEOUT_S)
            refuse_newer(conn)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            if migrate_schema and schema_version(conn) < SCHEMA_VERSION:
                conn.close()
                return None
            conn.execute("PRAGMA foreign_keys = ON")
            return conn
        except StoreError as exc:
            conn.close()
            if not isinstance(exc, DatabaseError):
                raise
        except sqlite3.DatabaseError:
            conn.close()
    return None


def wal_identity(path: str | os.PathLike[str]) -> tuple[int, int] | None:
    """The device and inode of the store's -wal file, or None when there is none."""
    try:
        st = os.stat(f"{os.fspath(path)}-wal")
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def checkpoint_lost_wal(
    conn: SqliteConnection, path: str | os.PathLike[str], known: tuple[int, int] | None
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
    except DatabaseError:
        return False
    return True
