"""Transactions as the engine writes them (``with write(conn):``), on whichever store
``conn`` belongs to, and the two ways tests and benchmarks open a store of a given kind.

`write` and `tentative` are the store's own (`api.Store.write`, `api.Store.tentative`),
reached from the connection the engine is given.
"""

from __future__ import annotations

import os
from contextlib import AbstractContextManager

from .api import BUSY_TIMEOUT_S, LOCK_ATTEMPTS, Connection
from .private_file import ensure_private_dir

__all__ = [
    "BUSY_TIMEOUT_S",
    "LOCK_ATTEMPTS",
    "ensure_private_dir",
    "open_store",
    "open_url",
    "tentative",
    "write",
]


def write(
    conn: Connection, *, attempts: int = LOCK_ATTEMPTS, wait_s: float | None = None
) -> AbstractContextManager[Connection]:
    """A write transaction on ``conn``'s store (`api.Store.write`): the write lock taken
    up front, waiting ``wait_s`` seconds per try (None: `BUSY_TIMEOUT_S`) for ``attempts``
    tries, then Busy; nested, a savepoint."""
    return conn.store.write(attempts=attempts, wait_s=wait_s)


def tentative(conn: Connection) -> AbstractContextManager[Connection]:
    """A write transaction on ``conn``'s store that is always rolled back
    (`api.Store.tentative`)."""
    return conn.store.tentative()


def open_store(path: str | os.PathLike[str], *, migrate_schema: bool = True) -> Connection:
    """The connection of the SQLite store at ``path`` (created and migrated as needed; see
    `sqlite.connection.connect`). Raises StoreError when it cannot be opened."""
    from .sqlite import SqliteStore

    return SqliteStore(path, migrate_schema=migrate_schema).conn


def open_url(url: str, *, tenant: str, migrate_schema: bool = True) -> Connection:
    """The connection of the PostgreSQL store at ``url`` (``postgresql://...``) bound to
    ``tenant``, migrated (see `postgres.connection.connect`). Raises StoreError when psycopg
    is missing or the server cannot be reached."""
    from .postgres import PostgresStore

    return PostgresStore(url, tenant=tenant, migrate_schema=migrate_schema).conn
