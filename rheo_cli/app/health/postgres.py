"""``rheo doctor`` on PostgreSQL: the store's checks, one line each, and ``--repair``.

The checks read the catalog for what the schema promises (`memory.store.pg_health`): schema
version, tables, the append-only guards, row-level security on every tenant table, the
extensions search needs, the search indexes, every stored ``tsvector`` against its text (the
profile's rows), jobs whose runner died, failed jobs. Repairs never change a row of the
ledger: guards and policies are recreated or enabled, indexes and ``tsvector`` columns rebuilt
from the text, stuck jobs put back in the queue, missing digests queued, the schema migrated.
A repair the connecting role may not make is reported, and the check stays a problem.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any

from ...memory.store import db, pg_health, pg_schema
from ...memory.store.errors import StoreError
from ...memory.store.timeutil import to_stored
from .checks import Check, jobs_check, now_or_clock, queue_missing_digests, session_check


def _attempt(repaired: list[str], what: str, fix: Callable[[], list[str]]) -> None:
    """Run one repair; a refusal (no rights, a lock) is noted, never raised."""
    try:
        repaired.extend(fix())
    except Exception as exc:  # noqa: BLE001 - reported as a line, the check stays a problem
        repaired.append(f"could not repair {what}: {' '.join(str(exc).split())[:160]}")


def checks(url: str, profile: str, repair: bool, repaired: list[str], gap_s: float) -> list[Check]:
    """The PostgreSQL store's checks for ``profile``'s tenant at ``url`` (after repairs when
    ``repair``, each noted in ``repaired``; ``gap_s``: the session gap, seconds). A server
    that cannot be reached is one problem; a failure midway keeps the checks made so far
    and adds it as a problem. The store is opened without migrating it, and closed."""
    try:
        opened: Any = db.open_url(url, tenant=profile, migrate_schema=False)
    except StoreError as exc:
        return [Check("database", False, str(exc))]
    found: list[Check] = []
    try:
        found.append(Check("database", True, pg_health.server(opened)))
        if _schema_checks(opened, repair, repaired, found):
            _catalog_checks(opened, profile, repair, repaired, found)
            found.append(session_check(opened, profile, repair, repaired))
            found.append(_jobs_check(opened, profile, repair, repaired, gap_s))
    except sqlite3.Error as exc:
        found.append(Check("database", False, " ".join(str(exc).split())[:200]))
    finally:
        opened.close()
    return found


def _schema_checks(opened: Any, repair: bool, repaired: list[str], found: list[Check]) -> bool:
    """The schema's version and tables, into ``found`` (``repair`` migrates an older schema
    first); True when every table is there to check further."""
    if repair and pg_schema.schema_version(opened) < pg_schema.SCHEMA_VERSION:

        def upgrade() -> list[str]:
            with pg_schema.owner_rights(opened):
                return [f"schema upgraded: {', '.join(pg_schema.migrate(opened))}"]

        _attempt(repaired, "the schema", upgrade)
    version = pg_schema.schema_version(opened)
    if version == 0 and len(pg_health.missing_tables(opened)) == len(pg_health.TABLES):
        refused = pg_schema.trial_migrate(opened)  # rolled back: nothing is left behind
        found.append(
            Check("schema", True, "no rheo tables yet: any rheo command makes them")
            if refused is None
            else Check("schema", False, f"rheo cannot create its tables here: {refused}")
        )
        return False
    problems = pg_health.schema_problems(opened)
    found.append(Check("schema", not problems, "; ".join(problems) or f"version {version}"))
    missing = pg_health.missing_tables(opened)
    detail = f"missing: {', '.join(missing)}" if missing else "all present"
    found.append(Check("tables", not missing, detail))
    return not missing


def _catalog_checks(
    opened: Any, profile: str, repair: bool, repaired: list[str], found: list[Check]
) -> None:
    """The guards, row-level security, extensions and search, into ``found`` (each repaired
    first when ``repair``), then the search's speed (an ok line either way)."""
    parts: tuple[tuple[str, str, Callable[[], list[str]], Callable[[], list[str]], str], ...] = (
        ("append-only guards", "the guards", lambda: pg_health.repair_guards(opened),
         lambda: pg_health.guard_problems(opened),
         f"{len(pg_health.GUARDS)} triggers present and enabled"),
        ("row-level security", "row-level security", lambda: pg_health.repair_rls(opened),
         lambda: pg_health.rls_problems(opened),
         f"enabled and forced on {len(pg_schema.TENANT_TABLES)} tables, one policy each"),
        ("extensions", "the extensions", lambda: pg_health.repair_extensions(opened),
         lambda: pg_health.extension_problems(opened),
         ", ".join(pg_health.EXTENSIONS) + " installed"),
        ("search indexes", "the search", lambda: pg_health.repair_search(opened, profile),
         lambda: _search_problems(opened, profile),
         f"indexes valid; every tsvector of profile {profile} matches its text"),
    )  # fmt: skip
    for name, what, fix, problems_of, fine in parts:
        if repair:
            _attempt(repaired, what, fix)
        problems = problems_of()
        found.append(Check(name, not problems, "; ".join(problems) or fine))
    found.append(_speed_check(opened))


def _search_problems(opened: Any, profile: str) -> list[str]:
    """Invalid search indexes, and the tables holding rows of ``profile`` whose stored
    ``tsvector`` no longer matches their text."""
    problems = pg_health.index_problems(opened)
    stale = pg_health.stale_tsvectors(opened, profile)
    return problems + [f"{table}: {n} row(s) with a stale tsvector" for table, n in stale.items()]


def _speed_check(opened: Any) -> Check:
    """Speed, not health: an ok line either way, saying what a superuser can change."""
    if pg_health.match_is_leakproof(opened):
        return Check("search speed", True, "the full-text index is used under row-level security")
    return Check(
        "search speed",
        True,
        "every search reads all of this tenant's rows (row-level security keeps the full-text "
        "index unused; slow past ~10,000 turns); a superuser can lift it once per database: "
        f"{pg_health.LEAKPROOF_MATCH};",
    )


def _jobs_check(
    opened: Any, profile: str, repair: bool, repaired: list[str], gap_s: float
) -> Check:
    """The queue (``repair`` first puts back jobs whose runner died and queues missing
    digests): failed jobs and jobs running past their lease are a problem."""
    wall = time.time()
    if repair and (
        released := pg_health.release_stuck(opened, profile, wall, to_stored(now_or_clock()))
    ):
        repaired.append(f"{released} job(s) whose runner died put back in the queue")
    if repair and (queued := queue_missing_digests(opened, gap_s)):
        repaired.append(f"queued {queued} missing digest(s)")
    return jobs_check(opened, stuck=len(pg_health.stuck_jobs(opened, profile, wall)))
