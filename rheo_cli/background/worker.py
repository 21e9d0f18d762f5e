"""Running queued jobs: in a detached process after a reply, or in the foreground for
``rheo maintain``.

One detached worker runs at a time per RHEO_HOME (an flock on ``worker.lock``); a second one
started meanwhile exits at once, and the running one looks again for new jobs before it
leaves, so no job is stranded. A job held by a process that died is taken over at once.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..memory import jobs
from ..memory.store.errors import EngineError
from ..memory.store.timeutil import to_stored
from ..providers.base import ProviderError
from ..runtime import Runtime
from . import digest_job, extract_job
from .extractors import AllExtractorsFailed

BACKOFF_S = (30.0, 120.0, 600.0, 3600.0)
"""Wait before retry n (seconds); the last value repeats."""
LOG_MAX_BYTES = 1_000_000


@dataclass
class Summary:
    """What a run did: jobs done, to be retried, and failed for good, with notes/errors."""

    done: list[jobs.Job] = field(default_factory=list)
    retrying: list[tuple[jobs.Job, str]] = field(default_factory=list)
    failed: list[tuple[jobs.Job, str]] = field(default_factory=list)
    notes: dict[int, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The ``rheo maintain --json`` shape."""
        return {
            "done": [
                {"id": j.id, "kind": j.kind, "ref_id": j.ref_id, "notes": self.notes.get(j.id, [])}
                for j in self.done
            ],
            "retrying": [
                {"id": j.id, "kind": j.kind, "ref_id": j.ref_id, "error": e}
                for j, e in self.retrying
            ],
            "failed": [
                {"id": j.id, "kind": j.kind, "ref_id": j.ref_id, "error": e} for j, e in self.failed
            ],
        }


def worker_id() -> str:
    """``host:pid`` of this process, recorded on the jobs it holds."""
    return f"{socket.gethostname()}:{os.getpid()}"


def holder_alive(holder: str) -> bool:
    """Whether the process named ``host:pid`` still runs (other hosts: assume yes)."""
    host, _, pid_text = holder.rpartition(":")
    if host != socket.gethostname():
        return True
    try:
        pid = int(pid_text)
        os.kill(pid, 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def run_job(rt: Runtime, job: jobs.Job) -> list[str]:
    """Run one claimed job and mark it done (in the same transaction as its memory writes,
    so a retry never counts a fact twice); returns its notes. Raises on failure."""
    if job.kind == "extract":
        return extract_job.run(rt, job)
    if job.kind == "digest":
        return digest_job.run(rt, job)
    raise ValueError(f"unknown job kind {job.kind!r}")


def run_pending(
    rt: Runtime,
    *,
    profile: str | None = None,
    ignore_backoff: bool = False,
    on_job: Callable[[jobs.Job, str], None] | None = None,
) -> Summary:
    """Claim and run jobs until none is runnable (of ``profile``, or of every profile), each
    job at most once per call.

    ``on_job(job, outcome)`` is called after each (``"done"``, ``"retry"``, ``"failed"``).
    Failures never raise: they are counted on the job with their error and retried later
    (``ignore_backoff`` retries waiting jobs now, as ``rheo maintain`` does).
    """
    summary = Summary()
    me = worker_id()
    tried: set[int] = set()
    while True:
        job = jobs.claim(
            rt.conn,
            worker=me,
            wall_now=time.time(),
            ts=to_stored(rt.now()),
            profile=profile,
            holder_alive=holder_alive,
            ignore_backoff=ignore_backoff,
            exclude=frozenset(tried),
        )
        if job is None:
            return summary
        tried.add(job.id)
        try:
            notes = run_job(rt, job)
        except Exception as exc:  # noqa: BLE001 - one bad job must not stop the queue
            expected = (
                AllExtractorsFailed,
                ProviderError,
                EngineError,
                LookupError,
                digest_job.DigestUnusable,
                OSError,
            )
            error = (
                str(exc)
                if isinstance(exc, expected) and str(exc)
                else (f"{type(exc).__name__}: {str(exc)[:200]}")
            )
            retry_at = time.time() + BACKOFF_S[min(job.attempts, len(BACKOFF_S) - 1)]
            status = jobs.fail(
                rt.conn, job.id, error=error, ts=to_stored(rt.now()), retry_at=retry_at
            )
            outcome = "failed" if status == "failed" else "retry"
            (summary.failed if outcome == "failed" else summary.retrying).append((job, error))
            if on_job is not None:
                on_job(job, outcome)
            continue
        summary.done.append(job)
        summary.notes[job.id] = notes
        if on_job is not None:
            on_job(job, "done")


def _try_lock(handle: IO[str]) -> bool:
    import fcntl

    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def _unlock(handle: IO[str]) -> None:
    import fcntl

    with contextlib.suppress(OSError):
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def detached_main(rt: Runtime) -> int:
    """The detached worker's loop: hold the lock, run every runnable job, look again after
    letting go of the lock. Returns an exit status."""
    lock_path = rt.paths.home / "worker.lock"
    old = os.umask(0o077)
    try:
        handle = open(lock_path, "a")  # noqa: SIM115 - held for the process's life
    finally:
        os.umask(old)
    with handle:
        while _try_lock(handle):
            try:
                run_pending(rt)
            finally:
                _unlock(handle)
            if jobs.runnable_count(rt.conn, wall_now=time.time()) == 0:
                break
    return 0


def spawn(rt: Runtime) -> None:
    """Start a detached worker (its own session, no terminal) and return at once.

    It inherits the environment (RHEO_HOME, RHEO_NOW, the API settings); its stderr goes to
    ``worker.log`` beside the database."""
    log_path = rt.paths.home / "worker.log"
    old = os.umask(0o077)
    try:
        if log_path.exists() and log_path.stat().st_size > LOG_MAX_BYTES:
            log_path.unlink()
        log = open(log_path, "ab")  # noqa: SIM115 - handed to the child
    finally:
        os.umask(old)
    env = dict(os.environ)
    if rt.choice is not None:  # the worker extracts with the provider this command chose
        env["RHEO_PROVIDER"] = rt.choice.kind
    with log:
        subprocess.Popen(
            [sys.executable, "-m", "rheo_cli.background", "--worker"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )


def kick(rt: Runtime) -> None:
    """Get queued jobs running as ``RHEO_WORKER`` says: ``spawn`` (default, a detached
    process), ``inline`` (now, in this process), or ``off`` (leave them for
    ``rheo maintain``)."""
    mode = os.environ.get("RHEO_WORKER", "spawn").strip().lower() or "spawn"
    if mode == "off":
        return
    if mode == "inline":
        run_pending(rt, profile=rt.profile)
        return
    with contextlib.suppress(OSError):
        spawn(rt)


def kick_background(rt: Runtime) -> None:
    """Start the background worker for queued jobs; never raises, because memory work must not
    disturb the chat ("no memory is better than a failed chat", Solid# article)."""
    with contextlib.suppress(Exception):
        kick(rt)
