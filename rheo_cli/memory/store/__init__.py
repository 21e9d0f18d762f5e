"""The store: where rheo keeps everything, behind one interface (`api.Store`).

`open` chooses the implementation once from the location it is given — a ``postgresql://``
URL for `postgres.PostgresStore`, anything else is the path of a SQLite file for
`sqlite.SqliteStore` — and everything after asks the store it returned. The engine's plain
SQL runs on ``store.conn`` (`api.Connection`); transactions, the queries whose text differs,
purge, backup, health and scope are the store's methods; the errors that cross are rheo's
(`errors`). Also here: the settings, time helpers, profile names and private files every
part of the engine shares.
"""

from __future__ import annotations

import os

from .api import Connection, Store


def choose(location: str | os.PathLike[str]) -> type[Store]:
    """The implementation `open` uses for ``location`` (nothing is opened): `PostgresStore`
    for a ``postgresql://`` or ``postgres://`` URL, else `SqliteStore`."""
    if isinstance(location, str) and location.startswith(("postgresql://", "postgres://")):
        from .postgres import PostgresStore

        return PostgresStore
    from .sqlite import SqliteStore

    return SqliteStore


def open(  # noqa: A001 - the store's one way in, called as ``store.open``
    location: str | os.PathLike[str],
    *,
    tenant: str | None = None,
    migrate_schema: bool = True,
    create: bool = True,
) -> Store:
    """The store at ``location`` (see `choose`), bound to ``tenant`` (a profile name from
    configuration; a server's store needs one, the SQLite file serves every profile and only
    records it), its schema brought up to date unless ``migrate_schema`` is False.
    ``create`` False refuses to make a store that does not exist yet (NotCreated).

    Raises StoreError (NewerStore, NotCreated) when it cannot be opened."""
    chosen = choose(location)
    if chosen.serves_one_tenant:
        from .postgres import PostgresStore

        if tenant is None:
            raise ValueError("a PostgreSQL store is opened for one tenant: name it")
        return PostgresStore(str(location), tenant=tenant, migrate_schema=migrate_schema)
    from .sqlite import SqliteStore

    return SqliteStore(location, tenant=tenant, migrate_schema=migrate_schema, create=create)


__all__ = ["Connection", "Store", "choose", "open"]
