"""The memory work a resident's request process does once its client has the answer: the
jobs the turn queued (extraction, the digest of a session the gap closed), run at once in
this warm process rather than in a new one; then, as the profile's session watcher, sleep
until the newest session closes (its last turn plus the gap) and write its digest then, so
the message after a pause finds it ready. One watcher per profile and RHEO_HOME
(``run/watch-PROFILE.lock``); another request process finds it held and leaves the waiting
to it (the watcher reads the close time from the store each time it wakes)."""

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
(the store was busy)."""


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
    profile, provider = queued[-1]
    for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(signum, signal.SIG_DFL)  # the command's handlers are done with
    os.environ["RHEO_PROFILE"] = profile
    if provider:
        os.environ["RHEO_PROVIDER"] = provider
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


def seconds_to_close() -> float | None:
    """Seconds until the profile's newest undigested session closes (negative: it has);
    None when none waits, or when ``RHEO_NOW`` pins the clock (time does not pass)."""
    from ...app import app as app_mod

    if os.environ.get("RHEO_NOW", "").strip():
        return None
    with app_mod.build() as app:
        close = app.next_session_close()
        if close is None:
            return None
        return (close - app.now()).total_seconds()


def watch(rheo_home: str, profile: str) -> None:
    """Wait for the profile's newest session to close and run the worker then (its pass
    queues the digest and writes it); end when no session waits for a digest."""
    lock = _watch_lock(rheo_home, profile)
    if lock is None:
        return
    from ...app.worker_process import run_worker

    try:
        ran_late = False
        while True:
            wait = seconds_to_close()
            if wait is None:
                return
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
