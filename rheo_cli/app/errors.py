"""Errors a front end may catch, and how to say them: the exit statuses and wording map these
statuses: rheo's own (`rheo_cli.errors`: UsageError exits 2, the other
RheoErrors exit 1) and the memory engine's, named here so that no front end imports the
engine (`EngineError`: one line fit to show a person; `NotFound` and `InvalidInput`: a wrong
argument, exit 2; `StoreError`: the store cannot be opened, is damaged or busy; `NewerStore`:
written by a newer rheo; `DatabaseError`: a statement failed, with its kinds `Busy` (another
process held the store past the bounded wait), `Unavailable` (server gone, read-only or full
disk) and `Integrity` (a constraint or guard refused the write)), and a model call's
(`ProviderError`: one line, exit 1). No driver's error (`sqlite3`, psycopg) crosses the store:
`database_message` says a `DatabaseError` in a person's words."""

from __future__ import annotations

from ..memory.store.api import BUSY_TIMEOUT_S
from ..memory.store.errors import (
    Busy,
    DatabaseError,
    EngineError,
    Integrity,
    InvalidInput,
    NewerStore,
    NotFound,
    StoreError,
    Unavailable,
)
from ..providers.base import ProviderError

__all__ = [
    "Busy",
    "DatabaseError",
    "EngineError",
    "Integrity",
    "InvalidInput",
    "NewerStore",
    "NotFound",
    "ProviderError",
    "StoreError",
    "Unavailable",
    "database_message",
    "io_error_message",
]

_WRITE_FAILED = frozenset(
    {"SQLITE_FULL", "SQLITE_IOERR_WRITE", "SQLITE_IOERR_FSYNC", "SQLITE_IOERR_DIR_FSYNC",
     "SQLITE_IOERR_TRUNCATE", "SQLITE_IOERR_NOMEM"}
)  # fmt: skip
"""SQLite's error names for a write the disk refused (full, over a size limit, failing)."""


def io_error_message(exc: BaseException) -> str:
    """A disk I/O error in words: a write the disk refused is "is the disk full?"; a read of
    the database's own files that came up short (SQLITE_IOERR_SHORT_READ: its -wal file
    removed under a running rheo, whose -shm still points into it) is said as that."""
    text = " ".join(str(exc).split())
    name = str(getattr(exc, "code", "") or "")
    if name in _WRITE_FAILED or (not name and "full" in text.lower()):
        return f"cannot write the database: {text} (is the disk full?)"
    return (
        f"cannot read the database's files: {text}{f' ({name})' if name else ''}: its -wal "
        "or -shm file was removed or replaced while rheo had it open, or the disk is failing; "
        "'rheo doctor' checks it"
    )


def database_message(exc: DatabaseError) -> str:
    """A one-line explanation of a failed statement (either store's, as the store raises
    it) for a person: busy, read-only, a damaged search index, a damaged file, a disk that
    refused a write or a read; else ``database error: <the database's words>``."""
    text = str(exc)
    lowered = text.lower()
    if isinstance(exc, Busy):
        return (
            "the database stayed busy: another process held it for more than "
            f"{BUSY_TIMEOUT_S:.0f} s; try again"
        )
    if "disk is full or failing" in lowered:  # opened read-only because the disk refused
        return "cannot write the database: the disk is full or failing (free some space)"
    if "readonly" in lowered or "read-only" in lowered:
        return "cannot write the database: it is read-only (check its permissions)"
    if "vtable constructor failed" in lowered or "fts5" in lowered:
        return (
            f"a search index is damaged ({text}); 'rheo doctor --repair' rebuilds it from "
            "the stored rows"
        )
    if "malformed" in lowered or "not a database" in lowered or "corrupt" in lowered:
        return f"the database is damaged ({text}); 'rheo paths' shows where it is"
    if "disk i/o" in lowered or "full" in lowered:
        return io_error_message(exc)
    return f"database error: {text}"
