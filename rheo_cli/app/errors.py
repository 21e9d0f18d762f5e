"""The errors the application layer raises, for front ends to turn into words and exit
statuses: rheo's own (`rheo_cli.errors`: UsageError exit 2, ConfigError and other
RheoErrors exit 1) and the memory engine's, named here so that no front end imports the
engine (`EngineError`: one line fit to show a person; `NotFound` and `InvalidInput`: a wrong
argument, exit 2; `StoreError`: the store cannot be opened, is damaged or busy; `NewerStore`:
written by a newer rheo; `DatabaseError`: a statement failed, with its kinds `Busy` (another
process held the store past the bounded wait), `Unavailable` (server gone, read-only or full
disk) and `Integrity` (a constraint or guard refused the write): `database_message` says
them in a person's words). No driver's error (`sqlite3`, psycopg) crosses the store."""

from __future__ import annotations

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

__all__ = [
    "Busy",
    "DatabaseError",
    "EngineError",
    "Integrity",
    "InvalidInput",
    "NewerStore",
    "NotFound",
    "StoreError",
    "Unavailable",
]
