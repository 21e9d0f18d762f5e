"""Running queued jobs: after a reply in the resident rheo when one runs (handed to it) or
else in a detached process, or in the foreground for ``rheo maintain``.

One runner works on the queue at a time per RHEO_HOME and store (an flock on
``worker.lock``, taken by the detached worker, by ``rheo maintain`` and by inline runs). A
detached worker that finds it held waits for it, unless another detached worker already
waits (an flock on ``worker.lock.wait``), then runs every runnable job: the holder may be a
``rheo maintain`` that runs only its own profile's jobs, or be about to let go after its last
look at the queue, and the waiting worker picks up what it leaves, so no job is stranded.
While nothing is due it sleeps (outside the lock) until the next job is, for up to
`IDLE_MAX_S`. A job held by a process that died is taken over at once; a running job's lease
is renewed by a heartbeat thread, so a long call is never taken over by a second worker.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from ..memory import jobs
from ..memory.store.api import Connection, Store
from ..memory.store.errors import EngineError
from ..memory.store.settings import Settings
from ..memory.store.timeutil import to_stored
from ..providers.base import ProviderError
from ..services import Services
from . import consolidate_job, digest_job, extract_job
from .extractors import AllExtractorsFailed

BACKOFF_S = (30.0, 120.0, 600.0, 3600.0)
"""Wait after failure n (seconds: the first failure waits 30 s); the last value repeats."""
IDLE_MAX_S = 60.0
"""A detached worker waits for a job that becomes due within this many seconds; it exits
when nothing is due sooner."""
POLL_S = (1.5, 5.0)
"""Shortest and longest sleep (seconds) of an idle detached worker between looks at the
queue: under one claim a second when idle, and a dead holder's job is noticed within 5 s."""
LOG_MAX_BYTES = 1_000_000


@dataclass
class Summary:
    """What a run did: jobs done, to be retried, and failed for good, with notes/errors."""

    done: list[jobs.Job] = field(default_factory=list)
    retrying: list[tuple[jobs.Job, str]] = field(default_factory=list)
    failed: list[tuple[jobs.Job, str]] = field(default_factory=list)
    lost: list[jobs.Job] = field(default_factory=list)
    notes: dict[int, list[str]] = field(default_factory=dict)

    @property
    def ran(self) -> bool:
        """Whether any job was claimed."""
        return bool(self.done or self.retrying or self.failed or self.lost)

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


def run_job(rt: Services, job: jobs.Job, worker: str) -> list[str]:
    """Run one job ``worker`` has claimed and mark it done (in the same transaction as its
    memory writes, so a retry never counts a fact twice); returns its notes. Raises on
    failure, LeaseLost (nothing written) when another worker took the job meanwhile."""
    if job.kind == "extract":
        return extract_job.run(rt, job, worker)
    if job.kind == "digest":
        return digest_job.run(rt, job, worker)
    if job.kind == "consolidate":
        return consolidate_job.run(rt, job, worker)
    raise ValueError(f"unknown job kind {job.kind!r}")


class Heartbeat:
    """Renews ``worker``'s lease on a job every third of ``lease_s`` from a thread with its
    own connection, while the job runs (a call may take an hour with retries)."""

    def __init__(self, rt: Services, job_id: int, worker: str, lease_s: float) -> None:
        self.store = rt.conn.store  # opened already: the job was claimed through it
        self.job_id = job_id
        self.worker = worker
        self.lease_s = lease_s
        self.lost = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rheo-lease", daemon=True)

    def _run(self) -> None:
        own: Store | None = None
        try:
            while not self._stop.wait(self.lease_s / 3):
                if own is None:
                    own = self.store.open_again()  # this thread's own connection
                ok = jobs.renew(
                    own.conn,
                    self.job_id,
                    worker=self.worker,
                    wall_now=time.time(),
                    lease_s=self.lease_s,
                )
                if not ok:
                    self.lost = True
                    return
        except Exception:  # noqa: BLE001 - a missed renewal only risks a takeover
            return
        finally:
            if own is not None:
                own.close()

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


def run_pending(
    rt: Services,
    *,
    profile: str | None = None,
    ignore_backoff: bool = False,
    on_job: Callable[[jobs.Job, str], None] | None = None,
    lease_s: float | None = None,
) -> Summary:
    """Claim and run jobs until none is runnable (of ``profile``, or of every profile), each
    job at most once per call. ``lease_s``: the lease (default `jobs.LEASE_S`), renewed
    while each job runs.

    ``on_job(job, outcome)`` is called after each (``"done"``, ``"retry"``, ``"failed"``,
    ``"lost"`` — another worker took it over; nothing was written or counted).
    Failures never raise: they are counted on the job with their error and retried later
    (``ignore_backoff`` retries waiting jobs now, as ``rheo maintain`` does).
    """
    summary = Summary()
    me = worker_id()
    lease = jobs.LEASE_S if lease_s is None else lease_s
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
            lease_s=lease,
        )
        if job is None:
            return summary
        tried.add(job.id)
        try:
            with Heartbeat(rt, job.id, me, lease):
                notes = run_job(rt, job, me)
        except jobs.LeaseLost:
            summary.lost.append(job)
            if on_job is not None:
                on_job(job, "lost")
            continue
        except Exception as exc:  # noqa: BLE001 - one bad job must not stop the queue
            expected = (
                AllExtractorsFailed,
                ProviderError,
                EngineError,
                LookupError,
                digest_job.DigestUnusable,
                extract_job.ExtractionUnreadable,
                consolidate_job.ConsolidationUnreadable,
                OSError,
            )
            error = (
                str(exc)
                if isinstance(exc, expected) and str(exc)
                else (f"{type(exc).__name__}: {str(exc)[:200]}")
            )
            retry_at = time.time() + BACKOFF_S[min(job.attempts, len(BACKOFF_S) - 1)]
            status = jobs.fail(
                rt.conn,
                job.id,
                worker=me,
                error=error,
                ts=to_stored(rt.now()),
                retry_at=retry_at,
                transient=isinstance(exc, (AllExtractorsFailed, ProviderError, OSError)),
            )
            if status is None:  # another worker holds or finished it: not ours to count
                summary.lost.append(job)
                if on_job is not None:
                    on_job(job, "lost")
                continue
            outcome = "failed" if status == "failed" else "retry"
            (summary.failed if outcome == "failed" else summary.retrying).append((job, error))
            if on_job is not None:
                on_job(job, outcome)
            continue
        summary.done.append(job)
        summary.notes[job.id] = notes
        if on_job is not None:
            on_job(job, "done")


def queue_closed(conn: Connection, profile: str, now: datetime, settings: Settings) -> list[int]:
    """Queue digest jobs for ``profile``'s sessions closed by time (`closing.
    queue_closed_sessions`: one indexed read); the session ids queued. Never raises: a locked
    or read-only store just leaves them for the next run."""
    from ..memory.ledger import closing

    try:
        return closing.queue_closed_sessions(conn, profile=profile, now=now, gap_s=settings.gap_s)
    except EngineError:  # the store's errors included: busy, read-only
        return []


def queue_closed_everywhere(rt: Services) -> list[int]:
    """Queue digest jobs for sessions closed by time in every profile the worker serves
    (`served_profile`); returns the session ids queued. Never raises."""
    from ..memory.ledger import closing

    served = served_profile(rt)
    try:
        profiles = [served] if served is not None else closing.profiles_with_sessions(rt.conn)
    except Exception:  # noqa: BLE001 - queueing is opportunistic
        return []
    now = rt.now()
    return [sid for name in profiles for sid in queue_closed(rt.conn, name, now, rt.settings)]


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


def served_profile(rt: Services) -> str | None:
    """The profile whose jobs a worker of ``rt`` runs: its own where the store's connection
    sees one tenant (PostgreSQL's row-level security), else None (every profile of the
    SQLite file). Asked of the store's implementation, without opening it."""
    return rt.profile if rt.store_class.serves_one_tenant else None


def lock_name(rt: Services) -> str:
    """The worker lock's file name in RHEO_HOME: ``worker.lock`` for the SQLite file (one
    worker serves every profile), ``worker-PROFILE.lock`` on PostgreSQL (a worker serves its
    own tenant, so each profile's worker runs beside the others')."""
    served = served_profile(rt)
    return "worker.lock" if served is None else f"worker-{served}.lock"


def _lock_file(rt: Services) -> IO[str]:
    from ..memory.store.db import ensure_private_dir

    ensure_private_dir(rt.paths.home)  # on PostgreSQL nothing else may have created it
    old = os.umask(0o077)
    try:
        return open(rt.paths.home / lock_name(rt), "a")  # noqa: SIM115 - caller closes
    finally:
        os.umask(old)


@contextlib.contextmanager
def worker_lock(rt: Services) -> Iterator[None]:
    """Hold the worker lock of RHEO_HOME, waiting for a running worker to let go of it (it
    does after each pass over the queue). ``rheo maintain`` and inline runs use it, so no two
    runners work on the queue at once."""
    import fcntl

    with _lock_file(rt) as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            _unlock(handle)


def _wait_turn(rt: Services, handle: IO[str]) -> bool:
    """Wait for the worker lock on ``handle`` as the one waiting detached worker; False at
    once when another one already waits (it will run whatever this one would have)."""
    import fcntl

    from ..memory.store.db import ensure_private_dir

    ensure_private_dir(rt.paths.home)
    old = os.umask(0o077)
    try:
        slot = open(rt.paths.home / f"{lock_name(rt)}.wait", "a")  # noqa: SIM115 - closed below
    finally:
        os.umask(old)
    with slot:
        if not _try_lock(slot):
            return False
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        finally:
            _unlock(slot)  # the next worker to come may wait behind this one
    return True


def detached_main(
    rt: Services, *, idle_max_s: float = IDLE_MAX_S, poll_s: tuple[float, float] = POLL_S
) -> int:
    """The detached worker's loop: hold the lock, run every runnable job, let go of the lock;
    then sleep until the next job is due (``poll_s`` bounds each sleep, seconds) and look
    again, as long as one is due within ``idle_max_s`` of the last work. When another runner
    holds the lock it waits for it, unless another detached worker is already waiting (then
    it exits). Returns an exit status."""
    with _lock_file(rt) as handle:
        idle_since = time.monotonic()
        while _try_lock(handle) or _wait_turn(rt, handle):
            try:
                queue_closed_everywhere(rt)
                summary = run_pending(rt, profile=served_profile(rt))
            finally:
                _unlock(handle)
            if summary.done or summary.retrying or summary.failed:
                idle_since = time.monotonic()
                continue  # new jobs may have come while these ran
            wake = jobs.next_wake(rt.conn, profile=served_profile(rt))
            if wake is None:
                break
            wait = max(wake - time.time(), 0.0)
            if time.monotonic() - idle_since + wait > idle_max_s:
                break
            time.sleep(min(max(wait, poll_s[0]), poll_s[1]))
    return 0


def next_wake(rt: Services) -> float | None:
    """When (Unix time) the next job of the profiles a worker of ``rt`` serves may run
    (`jobs.next_wake`; in the past: now); None when none is pending or running."""
    return jobs.next_wake(rt.conn, profile=served_profile(rt))


def worker_env(rt: Services) -> dict[str, str]:
    """The environment a worker for ``rt`` runs with: this process's, with RHEO_PROFILE set
    to this command's profile (``--profile`` included), so on PostgreSQL it opens that
    profile's tenant, and RHEO_PROVIDER to the provider this command chose (extraction uses
    it)."""
    env = dict(os.environ)
    env["RHEO_PROFILE"] = rt.profile
    if rt.choice is not None:
        env["RHEO_PROVIDER"] = rt.choice.kind
    return env


def hand_to_resident(rt: Services) -> bool:
    """Hand the queued jobs to the resident rheo of this RHEO_HOME when rheo may use one
    (``RHEO_RESIDENT``, ``[resident] mode``) and one of this build runs: it runs them at once
    in a process forked from its warm state, with `worker_env` for that process alone, then
    watches the profile's session (`rheo_cli.resident.client.hand_work`). False when it did
    not take them (none runs, it did not answer in time, another build: it retires). Never
    raises."""
    from ..resident import client

    home = str(rt.paths.home)
    try:
        return client.enabled(os.environ, home) and client.hand_work(home, worker_env(rt))
    except Exception:  # noqa: BLE001 - a worker process does the work instead
        return False


def spawn(rt: Services) -> None:
    """Start a detached worker (its own session, no terminal) and return at once.

    It inherits the environment (RHEO_HOME, RHEO_NOW, the API settings) as `worker_env` sets
    it; its stderr goes to ``worker.log`` in RHEO_HOME (created here when missing, as it is on
    PostgreSQL's first use). Raises OSError when it cannot start."""
    from ..memory.store.db import ensure_private_dir

    ensure_private_dir(rt.paths.home)
    log_path = rt.paths.home / "worker.log"
    old = os.umask(0o077)
    try:
        if log_path.exists() and log_path.stat().st_size > LOG_MAX_BYTES:
            log_path.unlink()
        log = open(log_path, "ab")  # noqa: SIM115 - handed to the child
    finally:
        os.umask(old)
    with log:
        subprocess.Popen(
            [sys.executable, "-m", "rheo_cli.app.worker_process", "--worker"],
            env=worker_env(rt),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )


DEFERRED: list[tuple[str, str | None]] | None = None
"""Set (a list) by a resident's request process, which runs the worker itself once its
client is answered: ``kick`` then records ``(profile, provider kind)`` instead of spawning."""


def worker_mode() -> str:
    """``RHEO_WORKER``: ``spawn`` (the default), ``inline`` or ``off`` (see `kick`)."""
    return os.environ.get("RHEO_WORKER", "spawn").strip().lower() or "spawn"


def kick(rt: Services) -> None:
    """Get queued jobs running as ``RHEO_WORKER`` says: ``spawn`` (default: handed to the
    resident rheo when one of this build runs, `hand_to_resident`, else a detached process —
    or, in a resident's request process, the same process once the client has its answer:
    `DEFERRED`), ``inline`` (now, in this process), or ``off`` (leave them for
    ``rheo maintain``)."""
    mode = worker_mode()
    if mode == "off":
        return
    if DEFERRED is not None and mode != "inline":
        DEFERRED.append((rt.profile, rt.choice.kind if rt.choice is not None else None))
        return
    if mode == "inline":
        with worker_lock(rt):
            run_pending(rt, profile=rt.profile)
        return
    if hand_to_resident(rt):
        return
    with contextlib.suppress(OSError):
        spawn(rt)


def kick_background(rt: Services) -> None:
    """Start the background worker for queued jobs; never raises, because memory work must not
    disturb the chat ("no memory is better than a failed chat", Solid# article)."""
    with contextlib.suppress(Exception):
        kick(rt)
