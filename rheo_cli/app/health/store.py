"""``rheo doctor``'s checks of the store, whichever it is, and ``--repair``.

The store's own checks come from the store (`Store.health`: on SQLite its schema version,
integrity, writability, tables and FTS5 indexes; on PostgreSQL also the guards, row-level
security, extensions and search postings); then, on every store, what the engine keeps: the
sessions' counters against their turns, jobs whose runner died, missing digests, pending
and failed jobs. Repairs never change a row of the ledger. The store is opened without
migrating it (``--repair`` migrates it) and closed before this returns.
"""

from __future__ import annotations

import time

from ...memory import store as store_mod
from ...memory.store.api import Store
from ...memory.store.errors import NotCreated, StoreError
from ...memory.text.render import plural
from .checks import Check, guarded, jobs_check, queue_missing_digests, session_check, why


def checks(
    location: str, profile: str, repair: bool, repaired: list[str], gap_s: float
) -> list[Check]:
    """The checks of the store at ``location`` (a SQLite file's path or a PostgreSQL URL,
    bound to ``profile``), after repairs when ``repair`` (each noted in ``repaired``;
    ``gap_s``: the session gap, seconds, for missing digests). A store not created yet is
    healthy; one that cannot be opened is one problem; a damaged part makes the checks that
    read it problems, never stops the list."""
    try:
        opened = store_mod.open(location, tenant=profile, migrate_schema=False, create=False)
    except NotCreated as exc:
        return [Check("database", True, str(exc))]
    except StoreError as exc:
        return [Check("database", False, str(exc))]
    try:
        found = opened.health(repair=repair)
        repaired += found.repaired
        done = list(found.checks)
        if found.usable:
            done += _engine_checks(opened, repaired, repair and found.writable, gap_s)
        return done
    finally:
        opened.close()


def _engine_checks(opened: Store, repaired: list[str], repair: bool, gap_s: float) -> list[Check]:
    """What the engine keeps, on every store (of the profile a server's store is bound to,
    of every profile in the SQLite file): sessions' counters against their turns, jobs
    whose runner died (put back in the queue by ``repair``), missing digests (queued by
    ``repair``), pending and failed jobs."""
    from ...memory import jobs
    from ...memory.store.timeutil import to_stored
    from .checks import now_or_clock

    conn, scope = opened.conn, opened.scope
    found = [guarded("sessions", lambda: session_check(conn, scope, repair, repaired))]
    wall = time.time()
    if repair:
        try:
            if released := jobs.release_stuck(conn, scope, wall, to_stored(now_or_clock())):
                repaired.append(
                    f"{plural(released, 'job')} whose runner died put back in the queue"
                )
            if queued := queue_missing_digests(conn, gap_s):
                repaired.append(f"queued {plural(queued, 'missing digest')}")
        except (StoreError, MemoryError) as exc:
            repaired.append(f"could not queue missing digests: {why(exc)}")
    found.append(guarded("jobs", lambda: jobs_check(conn, len(jobs.stuck(conn, scope, wall)))))
    return found
