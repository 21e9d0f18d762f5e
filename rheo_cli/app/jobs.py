"""Background memory work for a person: the digests of closed sessions and the extraction
of facts, queued as jobs — run now (``rheo maintain``), listed (``rheo jobs``), or handed to
the resident rheo or a detached worker (the REPL at start) — and starting the resident (the
REPL and the Telegram bot as they start).

Every function takes the `App` first and works on its profile. Jobs are the engine's `Job`
(``kind`` extract, digest or consolidate; ``ref_id`` the assistant turn, the session, or the
memory event a review starts after; ``number`` the job's number within the profile); a run's
result is the worker's `Summary`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from ..background.worker import Summary
from ..memory import jobs as queue
from ..memory.jobs import Job
from ..memory.store.timeutil import to_stored

if TYPE_CHECKING:
    from .app import App

__all__ = [
    "Job",
    "Summary",
    "failed_count",
    "jobs",
    "queue_digests",
    "queue_review",
    "retry_failed",
    "run_pending",
    "start_background",
    "start_resident",
    "waiting_count",
]


def retry_failed(app: App) -> int:
    """Queue again every job that failed for good (after 5 failed calls); how many."""
    return queue.retry_failed(app.conn, profile=app.profile, ts=to_stored(app.now()))


def queue_digests(app: App) -> list[int]:
    """Queue a digest job for every session closed by time (its last turn more than the gap
    ago) that has neither a digest nor a job; the session ids queued."""
    now = app.now()
    closed_before = to_stored(now - timedelta(seconds=app.settings.gap_s))
    sessions = queue.sessions_awaiting_digest(
        app.conn, profile=app.profile, closed_before=closed_before
    )
    for session_id in sessions:
        queue.enqueue(
            app.conn, profile=app.profile, kind="digest", ref_id=session_id, ts=to_stored(now)
        )
    return sessions


def queue_review(app: App) -> bool:
    """Queue a consolidation job (a small model reviews the facts for duplicates and stale
    ones) when a fact was written since the last review and some facts are worth reviewing
    together, unless one is already queued or failed for good. True when one was queued."""
    from ..memory.facts import consolidate

    return consolidate.enqueue(app.conn, app.profile, to_stored(app.now()))


def waiting_count(app: App) -> int:
    """How many jobs are pending (due now or waiting to be retried) or running."""
    return queue.runnable_count(
        app.conn, wall_now=time.time(), profile=app.profile, include_waiting=True
    )


def run_pending(app: App, on_job: Callable[[Job, str], None] | None = None) -> Summary:
    """Run every pending job of the profile now, in this process, those waiting to be
    retried included, each at most once; never beside a detached worker (its lock is held
    meanwhile, so no job runs twice). ``on_job(job, outcome)`` after each (``"done"``,
    ``"retry"``, ``"failed"``, ``"lost"``). A failing job never raises: it is counted."""
    from ..background.worker import run_pending as run
    from ..background.worker import worker_lock

    with worker_lock(app):
        return run(app, profile=app.profile, ignore_backoff=True, on_job=on_job)


def failed_count(app: App) -> int:
    """How many of the profile's jobs failed for good."""
    return len(queue.list_jobs(app.conn, app.profile, statuses=("failed",), limit=10_000))


def jobs(app: App, limit: int = 20) -> list[Job]:
    """The profile's last ``limit`` jobs, newest first, with their numbers and notes."""
    return queue.list_jobs(app.conn, app.profile, limit=limit)


def start_background(app: App) -> bool:
    """Queue the digests of sessions closed by time while nobody was here and, when there
    were any and a provider is configured, start the background worker for them. True when
    it was started. Never raises: memory work must not disturb the chat."""
    if app.provider_ready() is not None or not app.queue_closed_sessions():
        return False
    from ..background.worker import kick_background

    kick_background(app)
    return True


def start_resident(app: App) -> bool:
    """Start the resident rheo of this RHEO_HOME when rheo may use one (``RHEO_RESIDENT``,
    ``[resident] mode``) and none runs or is starting, so that by the first reply it is there
    and the memory work after each reply is handed to it (`background.worker.kick`) rather
    than to a new worker process. True when one was started; never raises. The REPL and the
    Telegram bot call it as they start; one-shot commands do not (``rheo ask`` starts one once
    it succeeded)."""
    from ..resident import client

    return client.start_if_enabled(str(app.paths.home))
