"""``rheo resident status|stop``: what they say, and a reader that goes away."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers import REPO


def _closed_pipe_run(home, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``rheo ARGS`` with stdout a pipe whose reader is already gone."""
    read, write = os.pipe()
    os.close(read)
    try:
        env = {**os.environ, "RHEO_HOME": str(home), "RHEO_RESIDENT": "1"}
        return subprocess.run(
            [sys.executable, "-m", "rheo_cli", *args],
            stdout=write,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=str(REPO),
            timeout=60,
        )
    finally:
        os.close(write)


def test_status_and_stop_into_a_closed_pipe_end_quietly(tmp_path):
    for args in (("resident", "status"), ("resident", "status", "--json"), ("resident", "stop")):
        result = _closed_pipe_run(tmp_path / "home", *args)
        assert (result.returncode, result.stderr) == (0, ""), (args, result.stderr)


def test_a_resident_starting_or_stopping_is_named_by_status_and_doctor(home, monkeypatch):
    """While a resident holds its lock but does not answer yet (starting) or any more
    (stopping), `rheo resident status` and `rheo doctor` say which, with its pid; once the
    lock is let go, "not running"."""
    import fcntl

    from rheo_cli.app.health.resident import resident_check
    from rheo_cli.resident import control, protocol

    monkeypatch.setenv("RHEO_RESIDENT", "1")
    rheo_home = str(home)
    protocol.ensure_run_dir(rheo_home)
    fd = os.open(protocol.lock_path(rheo_home), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held, as a resident holds it
        for state, words in (("", "starting (pid 4242)"), ("stopping", "stopping (pid 4242")):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"4242 {state}\n".encode(), 0)
            assert control.describe(None, rheo_home) == f"resident: {words}" + (
                ": running requests get 30 s to finish)" if state else ""
            )
            check = resident_check(home)
            assert check.ok and check.detail.startswith(words), check
    finally:
        os.close(fd)  # lets go of the lock
    assert control.describe(None, rheo_home).startswith("resident: not running")
    assert resident_check(home).detail.startswith("not running")
