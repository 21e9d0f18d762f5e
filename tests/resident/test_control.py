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
