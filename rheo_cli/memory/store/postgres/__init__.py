"""rheo's store on PostgreSQL: `PostgresStore`, for memory shared across machines or a team.

One connection is bound to one tenant (a profile) and row-level security holds it there; a
writer of a tenant queues on its advisory lock (`connection.PgConnection.begin`), waiting at
most `api.BUSY_TIMEOUT_S` per try as SQLite's writers do; search reads each row's lexemes
from the ``postings`` table with leakproof conditions only, ranked by bm25 computed as FTS5
does (`search`); each member's own login and the profiles granted to it are `roles`; the
schema's own migrations, checks and purge are `schema`, `doctor` and `purge`. psycopg is
imported here and nowhere else of rheo (inside functions, only when a ``postgresql://`` store
is opened).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar

from ...text.safety import redact_url
from ..api import Health, Logins, Store
from . import doctor, purge, roles, search
from .connection import TENANT_LOCK, PgConnection, connect, is_postgres_url

__all__ = ["PostgresStore", "is_postgres_url"]


class PostgresStore(Store):
    """The store in the PostgreSQL database at ``url``, bound to ``tenant``."""

    kind: ClassVar[str] = "postgres"
    serves_one_tenant: ClassVar[bool] = True
    server_keeps_copies: ClassVar[bool] = True
    refuses_nul: ClassVar[bool] = True
    has_logins: ClassVar[bool] = True
    extra: ClassVar[str | None] = "postgres"
    extra_for: ClassVar[str] = "PostgreSQL needs psycopg"

    conn: PgConnection
    tenant: str

    def __init__(self, url: str, *, tenant: str, migrate_schema: bool = True) -> None:
        """Connect as ``tenant`` (a profile name from configuration), migrating the schema
        unless ``migrate_schema`` is False; see `connection.connect` for what is raised."""
        self.url = url
        self.location = self.shown(url)
        self.tenant = tenant
        self.repair_notices: list[Callable[[str], None]] = []
        self.conn = connect(url, tenant, migrate_schema=migrate_schema)
        self.conn.store = self

    @classmethod
    def shown(cls, location: str) -> str:
        return redact_url(location)

    def open_again(self) -> PostgresStore:
        return PostgresStore(self.url, tenant=self.tenant, migrate_schema=False)

    # --- team logins ---------------------------------------------------------------------

    def grant(self, member: str, profile: str, *, now: datetime) -> bool:
        return roles.grant(self.conn, member, profile, now=now)

    def revoke(self, member: str, profile: str) -> bool:
        return roles.revoke(self.conn, member, profile)

    def logins(self) -> Logins:
        conn = self.conn
        return Logins(
            login=roles.login(conn),
            owner=roles.owner(conn),
            is_owner=roles.is_owner(conn),
            grants=roles.grants(conn),
        )

    # --- scope ---------------------------------------------------------------------------

    def set_tenant(self, profile: str) -> None:
        """Bind the connection to ``profile``: every row-level security policy reads it.
        Raises StoreError inside a transaction."""
        self.conn.set_tenant(profile)
        self.tenant = profile

    def act_as(self, profile: str) -> None:
        """Write as ``profile``'s tenant until the transaction ends, with that tenant's
        write lock (as `PgConnection.begin` takes its own)."""
        self.conn.execute("SELECT set_config('rheo.tenant', ?, true)", (profile,))
        self.conn.execute(f"SELECT pg_advisory_xact_lock({TENANT_LOCK})", (profile,))

    # --- transactions --------------------------------------------------------------------

    def _begin(self, wait_s: float | None) -> None:
        self.conn.begin(wait_s)

    def _commit(self) -> None:
        self.conn.commit()

    def _rollback(self) -> None:
        self.conn.rollback()

    def set_wait(self, seconds: float) -> None:
        self.conn.set_wait(seconds)

    def _begin_snapshot(self) -> None:
        """``REPEATABLE READ READ ONLY``: the snapshot is taken at the first query."""
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        self.conn.execute("SELECT 1").fetchone()

    # --- search --------------------------------------------------------------------------

    def turn_ids(
        self,
        profile: str,
        terms: list[str],
        *,
        any_term: bool,
        newer_than: int | None,
        up_to: int | None,
        limit: int,
    ) -> list[int]:
        return search.window_turn_ids(
            self.conn, profile, terms, any_term=any_term, newer_than=newer_than, up_to=up_to,
            limit=limit,
        )  # fmt: skip

    def term_turn_ids(self, profile: str, term: str, cap: int) -> list[int]:
        return search.word_turn_ids(self.conn, profile, [term], cap)

    def newest_turn_ids(self, profile: str, terms: list[str], limit: int) -> list[int]:
        return search.newest_word_turn_ids(self.conn, profile, terms, limit)

    def cjk_turn_ids(self, profile: str, run: str, limit: int) -> list[int]:
        return search.cjk_turn_ids(self.conn, profile, run, limit)

    def trigram_turns(self, profile: str, columns: str, grams: list[str], limit: int) -> list[Any]:
        return search.trigram_turns(self.conn, profile, columns, grams, limit)

    def item_source_turns(self, profile: str, terms: list[str], limit: int) -> list[Any]:
        return search.item_source_turns(self.conn, profile, terms, limit)

    def search_items(
        self,
        profile: str,
        terms: list[str],
        *,
        any_term: bool,
        statuses: tuple[str, ...] | None,
        limit: int,
        view: tuple[str, list[Any]] = ("", []),
    ) -> list[Any]:
        return search.search_items(
            self.conn, profile, terms, any_term=any_term, statuses=statuses, limit=limit,
            view=view,
        )  # fmt: skip

    def search_digests(self, profile: str, terms: list[str], limit: int) -> list[Any]:
        return search.search_digests(self.conn, profile, terms, limit)

    def search_chunks(
        self, profile: str, terms: list[str], *, any_term: bool, limit: int
    ) -> list[Any]:
        return search.search_chunks(self.conn, profile, terms, any_term=any_term, limit=limit)

    def plain_turn_ids(self, profile: str, terms: list[str], limit: int) -> list[int]:
        return search.plain_turn_ids(self.conn, profile, terms, limit)

    # --- jobs ------------------------------------------------------------------------------

    _row_lock: ClassVar[str] = " FOR UPDATE SKIP LOCKED"

    # --- purge, backup, health -----------------------------------------------------------

    def purging(self, profile: str, ref: str) -> contextlib.AbstractContextManager[Any]:
        return purge.purging(self.conn, profile)

    def backup(self, dest: str, export: Callable[[str], int]) -> dict[str, Any]:
        """The tenant's records (a connection sees no other), written by ``export`` from one
        ``REPEATABLE READ`` snapshot: ``{"bytes", "profile", "records"}`` (``records``: the
        lines after the header)."""
        import os

        with self.snapshot():
            lines = export(dest)
        return {"bytes": os.path.getsize(dest), "profile": self.tenant, "records": lines - 1}

    def health(self, *, repair: bool) -> Health:
        return doctor.checks(self.conn, self.tenant, repair=repair)
