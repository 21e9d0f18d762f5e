"""What every ``rheo doctor`` check is and what the SQLite and PostgreSQL checks share:
`Check` (one line), `Diagnosis` (every check and what was repaired), the sessions' counters,
the jobs' states and the queueing of missing digests."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from ...memory.store import api
from ...memory.store.errors import StoreError
from ...memory.text.render import plural

Check = api.Check
"""One check's outcome: ``ok`` False is a problem; ``detail`` is one line."""


@dataclass
class Diagnosis:
    """What ``rheo doctor`` found: every check in the order made (``checks``) and, with
    ``--repair``, one line per repair made or attempted (``repaired``)."""

    checks: list[Check] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)

    @property
    def healthy(self) -> bool:
        """True when no check is a problem."""
        return all(c.ok for c in self.checks)

    @property
    def problems(self) -> list[Check]:
        """The checks that are problems, in order."""
        return [c for c in self.checks if not c.ok]

    def to_json(self) -> dict[str, Any]:
        """``{"healthy", "checks": [{"name", "ok", "detail"}], "repaired": [str]}``."""
        return {
            "healthy": self.healthy,
            "checks": [c.to_json() for c in self.checks],
            "repaired": self.repaired,
        }


def why(exc: BaseException) -> str:
    """One line for a failure while checking (at most 200 characters)."""
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def guarded(name: str, check: Callable[[], Check]) -> Check:
    """``check()``, or a problem named ``name`` when the store cannot be read for it (a
    damaged page): doctor lists every check either way, never stops at the first."""
    try:
        return check()
    except (StoreError, MemoryError) as exc:
        return Check(name, False, f"cannot be read: {why(exc)}")


def now_or_clock() -> datetime:
    """``RHEO_NOW`` when it is valid, else the system clock (doctor reports a bad one)."""
    from ... import clock
    from ...errors import RheoError

    try:
        return clock.from_env()()
    except RheoError:
        return datetime.now(UTC)


def queue_missing_digests(conn: Any, gap_s: float) -> int:
    """Queue a digest job for every session (of the profiles the connection sees) closed by
    time (``gap_s`` seconds since its last turn) with neither a digest nor a job; returns how
    many were queued."""
    from ...memory import jobs
    from ...memory.ledger import closing
    from ...memory.store.timeutil import to_stored

    now = now_or_clock()
    closed_before = to_stored(now - timedelta(seconds=gap_s))
    queued = 0
    for prof in closing.profiles_with_sessions(conn):
        for session_id in jobs.sessions_awaiting_digest(
            conn, profile=prof, closed_before=closed_before
        ):
            queued += jobs.enqueue(
                conn, profile=prof, kind="digest", ref_id=session_id, ts=to_stored(now)
            )
    return queued


def session_check(conn: Any, profile: str | None, repair: bool, repaired: list[str]) -> Check:
    """Sessions whose counters (turns, first and last turn's time) disagree with their turns
    (of ``profile``; every profile when None); ``repair`` recounts them from the turns."""
    from ...memory.ledger import counters

    if repair:
        try:
            if fixed := counters.repair(conn, profile):
                repaired.append(f"recounted the turns and times of {plural(len(fixed), 'session')}")
        except Exception as exc:  # noqa: BLE001 - reported as a line, the check stays a problem
            repaired.append(f"could not recount the sessions: {' '.join(str(exc).split())[:160]}")
    stale = counters.stale_sessions(conn, profile)
    detail = "every session's turn count and times match its turns"
    if stale:
        detail = (
            f"{plural(len(stale), 'session')} whose turn count or times disagree with their turns "
            "('rheo doctor --repair' recounts them)"
        )
    return Check("sessions", not stale, detail)


def jobs_check(conn: Any, stuck: int = 0) -> Check:
    """The queue's state: pending and failed jobs (of the profiles the connection sees), and
    ``stuck`` jobs running past their lease; failed or stuck ones are a problem."""
    from ...memory import jobs

    counts = jobs.status_counts(conn)
    failed = counts.get("failed", 0)
    waiting = counts.get("pending", 0) + counts.get("running", 0)
    detail = f"{waiting} pending, {failed} failed"
    if stuck:
        detail += f", {stuck} running past their lease (--repair re-queues them)"
    if failed:
        detail += " ('rheo maintain --retry-failed' re-queues failed jobs)"
    return Check("jobs", not failed and not stuck, detail)
