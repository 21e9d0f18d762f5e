"""Fixtures of the resident's tests: rheo run as a real ``rheo`` process (``python -m
rheo_cli``) with the resident on, against the fake Messages API; every resident and process
it forked is gone when the test ends (asserted)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import netguard
import pytest
from helpers import REPO, alive, descendants

from rheo_cli.resident import control, protocol

READY_S = 120.0
"""How long a resident may take to start on a loaded machine (its imports)."""


class Resident:
    """rheo commands run as processes with the resident on, for one RHEO_HOME."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        self.home = home
        self.env = env
        self.pids: set[int] = set()

    def environ(self, **extra: str) -> dict[str, str]:
        """The environment of a rheo process (``extra`` added)."""
        return netguard.subprocess_env({**self.env, **extra})

    def run(self, *args: str, input: str | None = None, **extra: str) -> Any:
        """Run ``rheo ARGS`` to its end: CompletedProcess with text stdout/stderr."""
        return subprocess.run(
            [sys.executable, "-m", "rheo_cli", *args],
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            env=self.environ(**extra),
            cwd=str(REPO),
            timeout=180,
        )

    def start(self, *args: str, **extra: str) -> subprocess.Popen[str]:
        """Start ``rheo ARGS`` and return the process (stdin empty)."""
        return subprocess.Popen(
            [sys.executable, "-m", "rheo_cli", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.environ(**extra),
            cwd=str(REPO),
        )

    def status(self) -> dict[str, Any] | None:
        """The running resident's status; None when none answers."""
        return control.ask(str(self.home), "status")

    def ready(self) -> dict[str, Any]:
        """Wait for the resident to answer (starting it on demand when none runs)."""
        deadline = time.monotonic() + READY_S
        from rheo_cli.resident import launch

        while time.monotonic() < deadline:
            answer = self.status()
            if answer is not None:
                self.pids.add(int(answer["pid"]))
                return answer
            with _env(self.environ()):
                launch.start(str(self.home))
            time.sleep(0.2)
        raise AssertionError("the resident did not start")

    def pid(self) -> int:
        """The running resident's pid."""
        return int(self.ready()["pid"])

    def cleanup(self) -> None:
        """Stop every resident of this home and what it forked; assert none is left."""
        answer = self.status()
        if answer is not None:
            self.pids.add(int(answer["pid"]))
        lock = Path(protocol.lock_path(str(self.home)))
        with contextlib.suppress(OSError, ValueError):
            self.pids.add(int(lock.read_text().split()[0]))
        doomed = set(self.pids)
        for pid in self.pids:
            doomed |= descendants(pid)
        for pid in doomed:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while any(alive(p) for p in doomed) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [p for p in doomed if alive(p)], "a resident process outlived its test"


@contextlib.contextmanager
def _env(env: dict[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def resident(api: Any, home: Path) -> Iterator[Resident]:
    """rheo with the resident on for the test's RHEO_HOME and the fake API."""
    env = {k: v for k, v in os.environ.items() if k not in ("RHEO_RESIDENT", "RHEO_WORKER")}
    env.update(
        RHEO_HOME=str(home),
        RHEO_RESIDENT="1",
        RHEO_WORKER="off",
        ANTHROPIC_BASE_URL=api.base_url,
        ANTHROPIC_API_KEY="test-key",
    )
    keeper = Resident(home, env)
    try:
        yield keeper
    finally:
        keeper.cleanup()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test here is marked ``resident``."""
    for item in items:
        if "tests/resident/" in str(item.fspath):
            item.add_marker(pytest.mark.resident)
