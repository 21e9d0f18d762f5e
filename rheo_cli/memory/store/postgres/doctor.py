"""``rheo doctor`` on PostgreSQL: the store's own checks, one line each, and ``--repair``.

The checks read the catalog for what the schema promises (`health`): the server, schema
version, tables, the append-only guards, row-level security on every tenant table, the
extensions search needs, the search indexes, every stored ``tsvector`` against its text (the
tenant's rows), and whether the full-text index can be used under row-level security. Repairs
never change a row of the ledger: guards and policies are recreated or enabled, indexes and
``tsvector`` columns rebuilt from the text, the schema migrated. A repair the connecting role
may not make is reported, and the check stays a problem. The engine's own checks (sessions'
counters, jobs) are the front end's, on every store.
"""

from __future__ import annotations

from collections.abc import Callable

from ...text.render import plural
from ..api import Check, Health
from ..errors import DatabaseError
from . import health, roles, schema
from .connection import PgConnection


def _attempt(repaired: list[str], what: str, fix: Callable[[], list[str]]) -> None:
    """Run one repair; a refusal (no rights, a lock) is noted, never raised."""
    try:
        repaired.extend(fix())
    except Exception as exc:  # noqa: BLE001 - reported as a line, the check stays a problem
        repaired.append(f"could not repair {what}: {' '.join(str(exc).split())[:160]}")


def checks(opened: PgConnection, profile: str, *, repair: bool) -> Health:
    """The PostgreSQL store's checks for ``profile``'s tenant (after repairs when
    ``repair``); ``usable`` is False when rheo's tables are not there (yet)."""
    found = Health()
    checks, repaired = found.checks, found.repaired
    try:
        checks.append(Check("database", True, health.server(opened)))
        if repair and schema.schema_version(opened) < schema.SCHEMA_VERSION:

            def upgrade() -> list[str]:
                with schema.owner_rights(opened):
                    applied = schema.migrate(opened, after_step=roles.regrant_members)
                    return [f"schema upgraded: {', '.join(applied)}"]

            _attempt(repaired, "the schema", upgrade)
        version = schema.schema_version(opened)
        if version == 0 and len(health.missing_tables(opened)) == len(health.TABLES):
            refused = schema.trial_migrate(opened)  # rolled back: nothing is left behind
            checks.append(
                Check("schema", True, "no rheo tables yet: any rheo command makes them")
                if refused is None
                else Check("schema", False, f"rheo cannot create its tables here: {refused}")
            )
            found.usable = False
            return found
        problems = health.schema_problems(opened)
        checks.append(Check("schema", not problems, "; ".join(problems) or f"version {version}"))
        missing = health.missing_tables(opened)
        checks.append(
            Check(
                "tables",
                not missing,
                f"missing: {', '.join(missing)}" if missing else "all present",
            )  # fmt: skip
        )
        if missing:
            found.usable = False
            return found

        if repair:
            _attempt(repaired, "the guards", lambda: health.repair_guards(opened))
        problems = health.guard_problems(opened)
        detail = f"{len(health.GUARDS)} triggers present and enabled"
        checks.append(Check("append-only guards", not problems, "; ".join(problems) or detail))

        if repair:
            _attempt(repaired, "row-level security", lambda: health.repair_rls(opened))
        problems = health.rls_problems(opened)
        detail = f"enabled and forced on {len(schema.TENANT_TABLES)} tables, one policy each"
        checks.append(Check("row-level security", not problems, "; ".join(problems) or detail))

        if repair:
            _attempt(repaired, "the extensions", lambda: health.repair_extensions(opened))
        problems = health.extension_problems(opened)
        detail = ", ".join(health.EXTENSIONS) + " installed"
        checks.append(Check("extensions", not problems, "; ".join(problems) or detail))

        if repair:
            _attempt(repaired, "the search", lambda: health.repair_search(opened, profile))
        problems = health.index_problems(opened)
        stale = health.stale_tsvectors(opened, profile)
        problems += [
            f"{table}: {plural(n, 'row')} with a stale tsvector" for table, n in stale.items()
        ]
        off = health.stale_postings(opened, profile)
        problems += [f"{table}: postings out of step ({n})" for table, n in off.items()]
        detail = f"index valid; every tsvector and posting of profile {profile} matches its text"
        checks.append(Check("search indexes", not problems, "; ".join(problems) or detail))
        checks.append(Check("search speed", True, health.search_speed(opened)))
    except DatabaseError as exc:
        checks.append(Check("database", False, " ".join(str(exc).split())[:200]))
        found.usable = False
    return found
