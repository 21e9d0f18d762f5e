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

from .doctor_cmd import Check, now_or_clock, queue_missing_digests, session_check


def _attempt(repaired: list[str], what: str, fix: Callable[[], list[str]]) -> None:
    """Run one repair; a refusal (no rights, a lock) is noted, never raised."""
    try:
        repaired.extend(fix())
    except Exception as exc:  # noqa: BLE001 - reported as a line, the check stays a problem
        repaired.append(f"could not repair {what}: {' '.join(str(exc).split())[:160]}")


def run_pg_checks(
    url: str, profile: str, repair: bool, repaired: list[str], gap_s: float
) -> list[Check]:
    """The PostgreSQL store's checks for ``profile``'s tenant (after repairs when ``repair``,
    each noted in ``repaired``)."""
    from ..memory import jobs
    from ..memory.store import db, pg_health, pg_schema
    from ..memory.store.errors import StoreError
    from ..memory.store.timeutil import to_stored

    checks: list[Check] = []
    try:
        opened: Any = db.open_url(url, tenant=profile, migrate_schema=False)
    except StoreError as exc:
        return [Check("database", False, str(exc))]
    try:
        checks.append(Check("database", True, pg_health.server(opened)))
        if repair and pg_schema.schema_version(opened) < pg_schema.SCHEMA_VERSION:

            def upgrade() -> list[str]:
                with pg_schema.owner_rights(opened):
                    return [f"schema upgraded: {', '.join(pg_schema.migrate(opened))}"]

            _attempt(repaired, "the schema", upgrade)
        version = pg_schema.schema_version(opened)
        if version == 0 and len(pg_health.missing_tables(opened)) == len(pg_health.TABLES):
            refused = pg_schema.trial_migrate(opened)  # rolled back: nothing is left behind
            checks.append(
                Check("schema", True, "no rheo tables yet: any rheo command makes them")
                if refused is None
                else Check("schema", False, f"rheo cannot create its tables here: {refused}")
            )
            return checks
        problems = pg_health.schema_problems(opened)
        checks.append(Check("schema", not problems, "; ".join(problems) or f"version {version}"))
        missing = pg_health.missing_tables(opened)
        checks.append(
            Check(
                "tables",
                not missing,
                f"missing: {', '.join(missing)}" if missing else "all present",
            )  # fmt: skip
        )
        if missing:
            return checks

        if repair:
            _attempt(repaired, "the guards", lambda: pg_health.repair_guards(opened))
        problems = pg_health.guard_problems(opened)
        detail = f"{len(pg_health.GUARDS)} triggers present and enabled"
        checks.append(Check("append-only guards", not problems, "; ".join(problems) or detail))

        if repair:
            _attempt(repaired, "row-level security", lambda: pg_health.repair_rls(opened))
        problems = pg_health.rls_problems(opened)
        detail = f"enabled and forced on {len(pg_schema.TENANT_TABLES)} tables, one policy each"
        checks.append(Check("row-level security", not problems, "; ".join(problems) or detail))

        if repair:
            _attempt(repaired, "the extensions", lambda: pg_health.repair_extensions(opened))
        problems = pg_health.extension_problems(opened)
        detail = ", ".join(pg_health.EXTENSIONS) + " installed"
        checks.append(Check("extensions", not problems, "; ".join(problems) or detail))

        if repair:
            _attempt(repaired, "the search", lambda: pg_health.repair_search(opened, profile))
        problems = pg_health.index_problems(opened)
        stale = pg_health.stale_tsvectors(opened, profile)
        problems += [f"{table}: {n} row(s) with a stale tsvector" for table, n in stale.items()]
        off = pg_health.stale_postings(opened, profile)
        problems += [f"{table}: postings out of step ({n})" for table, n in off.items()]
        detail = f"index valid; every tsvector and posting of profile {profile} matches its text"
        checks.append(Check("search indexes", not problems, "; ".join(problems) or detail))
        checks.append(Check("search speed", True, pg_health.search_speed(opened)))

        checks.append(session_check(opened, profile, repair, repaired))

        wall = time.time()
        if repair and (
            released := pg_health.release_stuck(opened, profile, wall, to_stored(now_or_clock()))
        ):
            repaired.append(f"{released} job(s) whose runner died put back in the queue")
        if repair and (queued := queue_missing_digests(opened, gap_s)):
            repaired.append(f"queued {queued} missing digest(s)")
        counts = jobs.status_counts(opened)
        stuck = pg_health.stuck_jobs(opened, profile, wall)
        failed = counts.get("failed", 0)
        waiting = counts.get("pending", 0) + counts.get("running", 0)
        detail = f"{waiting} pending, {failed} failed"
        if stuck:
            detail += f", {len(stuck)} running past their lease (--repair re-queues them)"
        if failed:
            detail += " ('rheo maintain --retry-failed' re-queues failed jobs)"
        checks.append(Check("jobs", not failed and not stuck, detail))
    except sqlite3.Error as exc:
        checks.append(Check("database", False, " ".join(str(exc).split())[:200]))
    finally:
        opened.close()
    return checks
