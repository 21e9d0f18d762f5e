"""Where a benchmark's stores live: SQLite files in a folder, or schemas on a PostgreSQL server.

    --backend sqlite                      (default) a fresh file per store, in a temporary folder
    --backend postgres [--database-url U] a fresh schema per store on the server at U (default
                                          $RHEO_BENCH_DATABASE_URL, then $RHEO_TEST_DATABASE_URL),
                                          every schema dropped when the run ends

A local server for it: ``eval "$(scripts/test-services start)"`` (PostgreSQL on 127.0.0.1:55432,
prints RHEO_TEST_DATABASE_URL). The schemas are created and dropped by the connecting role, which
must be allowed to (the test server's ``rheo`` superuser is).

As a plain role (no superuser, row-level security forced on it as the tables' owner), the way
BENCHMARKS.md measures: once, as a superuser, ``CREATE ROLE rheo_bench LOGIN NOSUPERUSER
NOBYPASSRLS; GRANT CREATE ON DATABASE rheo_test TO rheo_bench``, then
``--database-url postgresql://rheo_bench@127.0.0.1:55432/rheo_test``; `Stores.describe` says
what the run was. ``--keep`` (scale.py) keeps each store (a schema ``rheo_bench_keep_<name>``)
and measures it again on the next run instead of building it anew.

``--pg-leakproof-match`` (PostgreSQL, superuser only) marks the full-text match operator's
function, ``pg_catalog.ts_match_vq(tsvector, tsquery)``, LEAKPROOF for the run and restores it
at the end. Row-level security evaluates a query's conditions only after its policy unless
they are leakproof, so under rheo's tenant policies ``fts @@ query`` cannot use the GIN index
and every search reads all of the tenant's rows; marked leakproof, the planner may use the
index. It changes that database's catalog while the run lasts: run it on a server of your
own (the test server), never on one others use.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import uuid
from pathlib import Path
from typing import Any

from rheo_cli.memory.store import db
from rheo_cli.memory.store.errors import StoreError

BACKENDS = ("sqlite", "postgres")
MATCH_FUNCTION = "pg_catalog.ts_match_vq(tsvector, tsquery)"
"""The function behind ``tsvector @@ tsquery``."""
URL_VARIABLES = ("RHEO_BENCH_DATABASE_URL", "RHEO_TEST_DATABASE_URL")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``--backend`` and ``--database-url`` on a benchmark's command line."""
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="sqlite",
        help="where the stores live (default sqlite: files in a temporary folder)",
    )
    parser.add_argument(
        "--database-url",
        default=None,
        help="PostgreSQL server for --backend postgres (default $RHEO_BENCH_DATABASE_URL, "
        "then $RHEO_TEST_DATABASE_URL)",
    )
    parser.add_argument(
        "--pg-leakproof-match",
        action="store_true",
        help="PostgreSQL, superuser: mark ts_match_vq LEAKPROOF for the run so row-level "
        "security lets full-text search use its GIN index (restored at the end)",
    )


def database_url(given: str | None) -> str | None:
    """The PostgreSQL URL from ``--database-url`` or the environment; None when neither."""
    if given:
        return given
    for name in URL_VARIABLES:
        if os.environ.get(name):
            return os.environ[name]
    return None


class Stores:
    """Fresh stores for one run, all on one backend; `close` removes what the run created.

    SQLite: ``open(name)`` opens ``folder/name.db``. PostgreSQL: ``open(name)`` creates the
    schema ``rheo_bench_<run>_<name>`` and opens it for ``tenant``; `close` drops every schema
    the run created (``CASCADE``), also after a failure.
    """

    def __init__(
        self,
        backend: str,
        *,
        folder: Path,
        url: str | None = None,
        leakproof_match: bool = False,
        keep: bool = False,
    ) -> None:
        if backend == "postgres" and not url:
            raise ValueError(
                "--backend postgres needs --database-url or RHEO_BENCH_DATABASE_URL "
                '(a local server: eval "$(scripts/test-services start)")'
            )
        self.backend = backend
        self.folder = folder
        self.base_url = url or ""
        self.run = "keep" if keep else uuid.uuid4().hex[:10]
        self.keep = keep
        self.schemas: list[str] = []
        self._admin: Any = None
        self._marked = False
        if backend == "postgres" and leakproof_match:
            self._mark_leakproof()

    def _mark_leakproof(self) -> None:
        """Mark ``ts_match_vq`` LEAKPROOF unless it already is (undone by `close`)."""
        import psycopg

        admin = self._admin_conn()
        already = admin.execute(
            "SELECT proleakproof FROM pg_proc WHERE oid = %s::regprocedure", (MATCH_FUNCTION,)
        ).fetchone()[0]
        if not already:
            try:
                admin.execute(f"ALTER FUNCTION {MATCH_FUNCTION} LEAKPROOF")
            except psycopg.Error as exc:
                raise StoreError(f"--pg-leakproof-match needs a superuser: {exc}") from None
            self._marked = True

    def _admin_conn(self) -> Any:
        """The run's own connection for creating and dropping schemas; raises StoreError
        (one line) when the server cannot be reached."""
        if self._admin is None:
            import psycopg

            try:
                self._admin = psycopg.connect(self.base_url, autocommit=True, connect_timeout=10)
            except psycopg.Error as exc:
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
                raise StoreError(f"cannot connect to PostgreSQL: {first}") from None
        return self._admin

    def schema(self, name: str) -> str:
        """The PostgreSQL schema of store ``name`` in this run."""
        return f"rheo_bench_{self.run}_{_ident(name)}"

    def store_url(self, name: str) -> str:
        """The URL of store ``name`` (its schema first on the search path): what
        ``RHEO_DATABASE_URL`` names it by for another process."""
        sep = "&" if "?" in self.base_url else "?"
        return f"{self.base_url}{sep}options=-csearch_path%3D{self.schema(name)}%2Cpublic"

    def create(self, name: str) -> str:
        """Create the new, empty schema of store ``name`` (PostgreSQL); its URL. A kept
        store's schema left by an unfinished build is dropped first."""
        admin = self._admin_conn()
        if self.keep:
            admin.execute(f"DROP SCHEMA IF EXISTS {self.schema(name)} CASCADE")
        admin.execute(f"CREATE SCHEMA {self.schema(name)}")
        if not self.keep:
            self.schemas.append(self.schema(name))
        return self.store_url(name)

    def built(self, name: str) -> bool:
        """True when a kept store ``name`` was built to the end before (`mark_built`)."""
        if not self.keep:
            return False
        if self.backend == "sqlite":
            return self.path(name).exists()
        found = (
            self._admin_conn()
            .execute("SELECT to_regclass(%s)", (f"{self.schema(name)}.bench_built",))
            .fetchone()[0]
        )
        return found is not None

    def mark_built(self, name: str) -> None:
        """Record that store ``name`` is complete (PostgreSQL, kept stores only)."""
        if self.keep and self.backend == "postgres":
            self._admin_conn().execute(f"CREATE TABLE {self.schema(name)}.bench_built ()")

    def describe(self) -> dict[str, Any]:
        """How the server runs the stores (PostgreSQL): the role the stores are opened as,
        whether it is a superuser or bypasses row-level security, and whether the full-text
        match is marked LEAKPROOF (a catalog change); {} for SQLite."""
        if self.backend != "postgres":
            return {}
        row = (
            self._admin_conn()
            .execute(
                "SELECT current_user, r.rolsuper, r.rolbypassrls, (SELECT proleakproof FROM "
                "pg_proc WHERE oid = %s::regprocedure), current_setting('server_version') "
                "FROM pg_roles r WHERE r.rolname = current_user",
                (MATCH_FUNCTION,),
            )
            .fetchone()
        )
        return {
            "role": row[0],
            "superuser": bool(row[1]),
            "bypassrls": bool(row[2]),
            "ts_match_vq_leakproof": bool(row[3]),
            "server_version": row[4],
        }

    def path(self, name: str) -> Path:
        """The SQLite file of store ``name``."""
        return self.folder / f"{_ident(name)}.db"

    def open(self, name: str, tenant: str) -> sqlite3.Connection:
        """A fresh, migrated store called ``name`` whose connection acts for ``tenant``."""
        if self.backend == "postgres":
            return db.open_url(self.create(name), tenant=tenant)
        return db.open_store(self.path(name))

    def reopen(self, name: str, tenant: str) -> sqlite3.Connection:
        """Another connection to the store ``name`` (already created by `open`)."""
        if self.backend == "postgres":
            return db.open_url(self.store_url(name), tenant=tenant, migrate_schema=False)
        return db.open_store(self.path(name), migrate_schema=False)

    def settle(self, name: str) -> None:
        """After a bulk load (PostgreSQL): ``VACUUM ANALYZE`` the store's tables, as autovacuum
        would soon do, so the planner has statistics and index-only scans a visibility map."""
        if self.backend != "postgres":
            return
        admin = self._admin_conn()
        tables = admin.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = %s", (self.schema(name),)
        ).fetchall()
        for (table,) in tables:
            admin.execute(f'VACUUM ANALYZE "{self.schema(name)}"."{table}"')

    def size_bytes(self, name: str) -> int:
        """The store's size on disk: the SQLite file with its WAL, or the schema's tables with
        their indexes and TOAST on the server."""
        if self.backend == "sqlite":
            return sum(p.stat().st_size for p in self.folder.glob(f"{_ident(name)}.db*"))
        schema = self.schema(name)
        row = (
            self._admin_conn()
            .execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
                "JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = %s AND c.relkind IN ('r', 'm')",
                (schema,),
            )
            .fetchone()
        )
        return int(row[0])

    def close(self) -> None:
        """Drop every schema this run created (PostgreSQL); SQLite files go with the folder."""
        if self.backend != "postgres" or (self._admin is None and not self.schemas):
            return
        admin = self._admin_conn()
        for schema in self.schemas:
            admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        self.schemas.clear()
        if self._marked:
            admin.execute(f"ALTER FUNCTION {MATCH_FUNCTION} NOT LEAKPROOF")
            self._marked = False
        admin.close()
        self._admin = None


def _ident(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() else "_" for ch in name.lower())
    return cleaned[:30] or "store"
