"""Background memory work for a profile: ``rheo maintain`` (queue the digests of sessions
that closed, then run every pending job now, in the foreground, under the worker lock so no
job runs twice beside a detached worker), ``--retry-failed``, ``rheo jobs list``, and starting
the detached background worker after a command queued jobs.

A job is the engine's `Job` (extraction of one exchange, or one session's digest); a run's
outcome is the worker's `Summary` (jobs done, to retry, failed for good, with their errors).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from ..background import worker
from ..background.worker import Summary
from ..memory import jobs
from ..memory.jobs import Job
from ..memory.ledger.sessions import session_numbers
from ..memory.store.timeutil import to_stored
from .app import App

__all__ = [
    "Job",
    "JobList",
    "Maintained",
    "Summary",
    "failed_for_good",
    "list_jobs",
    "maintain",
    "queue_due",
    "retry_failed",
    "run_pending",
    "start_worker",
]


@dataclass
class Maintained:
    """What ``rheo maintain`` did for ``profile``: ``requeued`` failed jobs put back in the
    queue (``--retry-failed``), the run's ``summary``, how many jobs stay ``failed`` for good
    afterwards, and ``server`` (True on PostgreSQL, where a profile sees only its own
    tenant's jobs)."""

    profile: str
    summary: Summary
    requeued: int = 0
    failed: int = 0
    server: bool = False

    def to_json(self) -> dict[str, Any]:
        """``{"profile", "done": [...], "retrying": [...], "failed": [...]}`` (`Summary`)."""
        return {"profile": self.profile, **self.summary.to_json()}


@dataclass
class JobList:
    """Recent jobs, newest first, and ``numbers``: ``{session id: the number the person
    sees}`` for naming a digest job's session (``s3``)."""

    jobs: list[Job]
    numbers: dict[int, int] = field(default_factory=dict)


def retry_failed(app: App) -> int:
    """Put ``app``'s profile's jobs that failed for good back in the queue; returns how many."""
    return jobs.retry_failed(app.conn, profile=app.profile, ts=to_stored(app.now()))


def queue_due(app: App) -> int:
    """Queue a digest job for each of the profile's sessions closed by time (the session gap
    since its last turn) with neither a digest nor a job; returns how many jobs are now
    runnable, those waiting to be retried included."""
    now = app.now()
    closed_before = to_stored(now - timedelta(seconds=app.settings.gap_s))
    for session_id in jobs.sessions_awaiting_digest(
        app.conn, profile=app.profile, closed_before=closed_before
    ):
        jobs.enqueue(
            app.conn, profile=app.profile, kind="digest", ref_id=session_id, ts=to_stored(now)
        )
    return jobs.runnable_count(
        app.conn, wall_now=time.time(), profile=app.profile, include_waiting=True
    )


def run_pending(app: App, on_job: Callable[[Job, str], None] | None = None) -> Summary:
    """Run every pending job of the profile now, retries included whatever their back-off,
    holding the worker lock (waiting for a detached worker to let go of it). ``on_job(job,
    outcome)`` follows each (``"done"``, ``"retry"``, ``"failed"``, ``"lost"``). A job's
    failure is counted on it, never raised; model calls go to the providers of ``app``."""
    with worker.worker_lock(app):  # never beside a detached worker: no job runs twice
        return worker.run_pending(app, profile=app.profile, ignore_backoff=True, on_job=on_job)


def failed_for_good(app: App) -> int:
    """How many of the profile's jobs failed for good (5 failed calls)."""
    return len(jobs.list_jobs(app.conn, app.profile, statuses=("failed",), limit=10_000))


def maintain(
    app: App,
    *,
    retry: bool = False,
    on_start: Callable[[int, int], None] | None = None,
    on_job: Callable[[Job, str], None] | None = None,
) -> Maintained:
    """``rheo maintain``: with ``retry``, re-queue the jobs that failed for good; queue the
    digests of closed sessions; then ``on_start(requeued, runnable)`` and `run_pending`
    (``on_job`` after each job). Raises StoreError or sqlite3.Error when the store cannot be
    read or written."""
    requeued = retry_failed(app) if retry else 0
    total = queue_due(app)
    if on_start is not None:
        on_start(requeued, total)
    summary = run_pending(app, on_job)
    return Maintained(
        profile=app.profile,
        summary=summary,
        requeued=requeued,
        failed=failed_for_good(app),
        server=bool(app.store_url),
    )


def list_jobs(app: App, limit: int = 20) -> JobList:
    """The profile's ``limit`` most recent jobs with the state of their last attempt, and
    the session numbers that name them."""
    found = jobs.list_jobs(app.conn, app.profile, limit=limit)
    return JobList(found, session_numbers(app.conn, app.profile) if found else {})


def start_worker(app: App) -> None:
    """Get the profile's queued jobs running as ``RHEO_WORKER`` says (a detached worker by
    default; ``inline``: now, in this process; ``off``: left for ``rheo maintain``). Never
    raises: memory work must not disturb what the person asked for."""
    worker.kick_background(app)
