"""The memory work the resident does, in a process forked from its warm state rather than in
a new worker process: the jobs a command queued (extraction right after a reply, the digest of
a session the gap closed) run at once, with that command's profile and provider; then, as the
profile's session watcher, the process sleeps until the newest session closes (its last turn
plus the gap) and writes its digest then, so the message after a pause finds it ready, and
wakes as well when a job waiting for a retry becomes due (`jobs.next_wake`: a failed
extraction is retried after its backoff without another command). One watcher per profile and
RHEO_HOME (``run/watch-PROFILE.lock``); another process finds it held and leaves the waiting
to it (the watcher reads the close time and the queue from the store each time it wakes).

Two kinds of process get here: a request's (`after_request`, once ``rheo ask`` has its
answer) and one forked for work another command handed over (`run_handed`: the REPL, the
Telegram bot, any command whose turn or import queued jobs, through
`rheo_cli.resident.client.hand_work`).

Decay and caps need no scheduling here: a fact's confidence decays when it is read
(`memory/facts/decay.py` computes it from its last reinforcement and the clock; nothing is
written), and the cap on active facts is enforced when a fact is written
(`memory/facts/cap.py`, from `remember`), so no job is due for them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import sys
import time

from ...background import worker
from .. import protocol

WAKE_MAX_S = 300.0
"""Longest sleep (seconds) between looks at the close time: a later turn moves it."""
RETRY_S = 5.0
"""Wait before looking again when the close time passed but the digest is not queued yet
(the store was busy), or a job due is not taken (another runner holds it)."""


STOPPING = False
"""Set when the resident is stopping (SIGUSR1): the request finishes, no later work runs."""


def note_stopping(signum: int, frame: object) -> None:
    """SIGUSR1 during the request: the resident stops; do no work after it."""
    global STOPPING
    STOPPING = True


def defer() -> None:
    """From now on, work a turn queues is recorded for `after_request`, not spawned."""
    worker.DEFERRED = []


def after_request(rheo_home: str) -> None:
    """Run the work the request queued, then watch its profile's session (see the module's
    docstring). Never raises."""
    signal.signal(signal.SIGUSR1, signal.SIG_DFL)  # the resident stopping ends this work
    queued = worker.DEFERRED or []
    worker.DEFERRED = None
    if not queued or STOPPING:
        return  # what was queued waits for the next worker (the job queue keeps it)
    with contextlib.suppress(Exception):  # counted as memory work from now (status)
        from .. import control

        control.ask(rheo_home, "working", pid=os.getpid())
    profile, provider = queued[-1]
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)  # the command's handlers are done with
    os.environ["RHEO_PROFILE"] = profile
    if provider:
        os.environ["RHEO_PROVIDER"] = provider
    work(rheo_home, profile)


def run_handed(rheo_home: str) -> None:
    """The work a command handed over, in the process forked for it with the command's
    environment (``RHEO_PROFILE`` and ``RHEO_PROVIDER`` set by the command, as for a worker
    process): the queued jobs, then the profile's session watcher. Never raises."""
    profile = os.environ.get("RHEO_PROFILE", "").strip()
    if profile:
        work(rheo_home, profile)
        return
    with contextlib.suppress(Exception):  # no profile named: the jobs alone
        from ...app.worker_process import run_worker

        run_worker()


def work(rheo_home: str, profile: str) -> None:
    """Run the worker for ``profile`` (the environment names it and its provider), then
    `watch` its session. Never raises."""
    from ...app.worker_process import run_worker

    with contextlib.suppress(Exception):
        run_worker()
        watch(rheo_home, profile)


def _watch_lock(rheo_home: str, profile: str) -> int | None:
    """The profile's watcher lock, held (this process's pid written in it); None when
    another process holds it."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in profile)
    path = os.path.join(protocol.run_dir(rheo_home), f"watch-{safe}.lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def seconds_to_wake() -> tuple[float | None, float | None]:
    """Seconds until the profile's newest undigested session closes (None when none waits,
    or when ``RHEO_NOW`` pins the clock: time does not pass) and until the next queued job
    may run (None when none is pending or running); negative: it has closed, it may run
    now."""
    from ...app import app as app_mod

    with app_mod.build() as app:
        close_in: float | None = None
        if not os.environ.get("RHEO_NOW", "").strip():
            close = app.next_session_close()
            if close is not None:
                close_in = (close - app.now()).total_seconds()
        wake = worker.next_wake(app)
        return close_in, (None if wake is None else wake - time.time())


def watch(rheo_home: str, profile: str) -> None:
    """Wait for the profile's newest session to close, or for a queued job to become due,
    and run the worker then (its pass queues the digest and writes it, or runs the job); end
    when no session waits for a digest and no job is queued."""
    lock = _watch_lock(rheo_home, profile)
    if lock is None:
        return
    from ...app.worker_process import run_worker

    try:
        ran_late = False
        while True:
            waits = [w for w in seconds_to_wake() if w is not None]
            if not waits:
                return
            wait = min(waits)
            if wait > 0:
                time.sleep(min(wait + 0.5, WAKE_MAX_S))
                ran_late = False
                continue
            if ran_late:
                time.sleep(RETRY_S)
            run_worker()
            ran_late = True
    finally:
        with contextlib.suppress(OSError):
            os.ftruncate(lock, 0)
        os.close(lock)
        with contextlib.suppress(Exception):
            sys.stderr.flush()
