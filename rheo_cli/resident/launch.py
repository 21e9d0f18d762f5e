"""Starting a resident on demand, standard library only: at most one per RHEO_HOME (the
running one holds ``resident.lock``; a second one started in a race exits at once)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys

from . import protocol

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
"""Variables whose name holds one of these stay out of the resident's own environment:
every request brings its own."""


def running(rheo_home: str) -> bool:
    """Whether a resident of ``rheo_home`` holds its lock (running, or starting)."""
    try:
        fd = os.open(protocol.lock_path(rheo_home), os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing lets go of the lock if this process took it
    return False


def holder(rheo_home: str) -> tuple[int, str] | None:
    """The pid of the resident holding the lock and what it is doing (``starting``,
    ``stopping``; ``running`` once it listens); None when none holds it."""
    if not running(rheo_home):
        return None
    try:
        with open(protocol.lock_path(rheo_home)) as handle:
            words = handle.read().split()
        return int(words[0]), (words[1] if len(words) > 1 else "starting")
    except (OSError, ValueError, IndexError):
        return None


def start(rheo_home: str) -> bool:
    """Start a detached resident for ``rheo_home`` unless one runs or is starting; True when
    one was started. Never raises: a resident that cannot start leaves rheo in-process."""
    try:
        folder = protocol.ensure_run_dir(rheo_home)
        if running(rheo_home):
            return False
        import subprocess

        env = {
            name: value
            for name, value in os.environ.items()
            if not any(word in name.upper() for word in SECRET_WORDS)
        }
        old = os.umask(0o077)
        try:
            log = open(os.path.join(folder, protocol.LOG_NAME), "ab")  # noqa: SIM115
        finally:
            os.umask(old)
        with log:
            subprocess.Popen(
                [sys.executable, "-m", "rheo_cli.resident.warm.server", rheo_home],
                env=env,
                cwd="/",
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                start_new_session=True,
                close_fds=True,
            )
        return True
    except Exception:  # noqa: BLE001 - in-process rheo works without it
        with contextlib.suppress(Exception):
            sys.stderr.flush()
        return False
