"""Exceptions raised by the memory engine, and the store's own: the only errors that cross
the store's interface (`api.Store`), whichever database is behind it.

A driver's exception (`sqlite3.Error`, psycopg's) never leaves ``store/sqlite/`` or
``store/postgres/``: each implementation says its failures as one of these, the driver's
words kept as the message (one line) and its code as `DatabaseError.code`.
"""

from __future__ import annotations


class EngineError(Exception):
    """Base class for engine errors; the message is one line, fit to show a person."""


class StoreError(EngineError):
    """The database cannot be opened, is from a newer rheo, or is damaged."""


class NewerStore(StoreError):
    """The database was written by a newer rheo (a higher schema version): left untouched."""


class NotCreated(StoreError):
    """The store does not exist yet, and was opened with ``create=False`` (``rheo doctor``
    reports it rather than creating an empty one)."""


class DatabaseError(StoreError):
    """A statement failed: the database's words on one line. ``code`` is the driver's name
    for the failure when it gives one (SQLite's ``SQLITE_IOERR_SHORT_READ``, PostgreSQL's
    SQLSTATE ``55P03``), else ``""``."""

    def __init__(self, message: str, *, code: str = "") -> None:
        super().__init__(message)
        self.code = code


class Busy(DatabaseError):
    """Another process held the store past the bounded wait (`api.BUSY_TIMEOUT_S` per try, on
    both stores): trying again later succeeds. Nothing of the failed transaction was kept."""


class Unavailable(DatabaseError):
    """The store cannot be used just now: the server cannot be reached or ended the
    connection, the file or its folder is read-only, the disk is full or failing."""


class Integrity(DatabaseError):
    """The database refused a write: a constraint (a second digest of one session, a key
    already taken), an append-only guard, or row-level security (a row of another tenant)."""


class NotFound(EngineError):
    """A turn, session, memory item or digest id does not exist in this profile."""


class InvalidInput(EngineError):
    """An argument is malformed (bad profile name, empty text, unknown category...)."""
