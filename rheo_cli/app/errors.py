"""The errors the application layer raises, for front ends to turn into words and exit
statuses: rheo's own (`rheo_cli.errors`: UsageError exit 2, ConfigError and other
RheoErrors exit 1) and the memory engine's, named here so that no front end imports the
engine (`EngineError`: one line fit to show a person; `NotFound` and `InvalidInput`: a wrong
argument, exit 2; `StoreError`: the store cannot be opened, is damaged or busy; `NewerStore`:
written by a newer rheo), and a model call's (`ProviderError`: one line, exit 1). A store's
own driver errors (`sqlite3.Error`, and PostgreSQL's as the engine raises them) may also
cross: `database_message` says them in a person's words."""

from __future__ import annotations

import sqlite3

from ..memory.store.errors import EngineError, InvalidInput, NewerStore, NotFound, StoreError
from ..providers.base import ProviderError

__all__ = [
    "EngineError",
    "InvalidInput",
    "NewerStore",
    "NotFound",
    "ProviderError",
    "StoreError",
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
    name = str(getattr(exc, "sqlite_errorname", "") or "")
    if name in _WRITE_FAILED or (not name and "full" in text.lower()):
        return f"cannot write the database: {text} (is the disk full?)"
    return (
        f"cannot read the database's files: {text}{f' ({name})' if name else ''}: its -wal "
        "or -shm file was removed or replaced while rheo had it open, or the disk is failing; "
        "'rheo doctor' checks it"
    )


def database_message(exc: sqlite3.Error) -> str:
    """A one-line explanation of a SQLite failure (or PostgreSQL's, as the engine raises
    it) for a person: busy, read-only, a damaged search index, a damaged file, a disk that
    refused a write or a read; else ``database error: <the driver's words>``."""
    text = str(exc)
    lowered = text.lower()
    if "locked" in lowered or "busy" in lowered:
        return "the database stayed busy: another process held it for more than 30 s; try again"
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
