"""Shared fixtures: a private RHEO_HOME per test, the fake Messages API, the network guard.

No test may reach a non-loopback address: `netguard` is installed for this process at import,
and subprocesses get it through `netguard.subprocess_env` (a sitecustomize on PYTHONPATH).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import netguard
import pytest
from fakeapi import FakeAnthropic
from fakeprovider import FakeProvider
from typer.testing import CliRunner

netguard.install()

_CLEARED = (
    "RHEO_HOME",
    "RHEO_PROFILE",
    "RHEO_MODEL",
    "RHEO_NOW",
    "RHEO_WORKER",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "NO_COLOR",
    "ANTHROPIC_PROFILE",
)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh RHEO_HOME for every test; rheo's and the SDK's variables cleared."""
    for name in _CLEARED:
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "rheo-home"
    monkeypatch.setenv("RHEO_HOME", str(folder))
    monkeypatch.setenv("RHEO_WORKER", "off")
    monkeypatch.setenv("HOME", str(tmp_path))
    return folder


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    """The fake Messages API, with ANTHROPIC_BASE_URL and a test key pointing the SDK at it."""
    with FakeAnthropic() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield server


class Rheo:
    """Runs rheo commands in-process with typer's CliRunner."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | bytes | None = None, **env: str) -> Any:
        from rheo_cli.cli.main import app

        return self.runner.invoke(app, list(args), input=input, env=env or None)


@pytest.fixture
def rheo() -> Rheo:
    """``rheo("history", "recent", "--json")`` -> click Result (exit_code, stdout, stderr)."""
    return Rheo()


@pytest.fixture
def conn(tmp_path: Path) -> Iterator[Any]:
    """An open, migrated store in the test's own folder (the engine's tests start here)."""
    from rheo_cli.memory.store import db

    c = db.open_store(tmp_path / "store.db")
    yield c
    c.close()


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch) -> FakeProvider:
    """The in-process fake model for every runtime built in this test (in-process commands
    only): queue replies with ``fake_model.add(...)``, read ``fake_model.requests``."""
    from rheo_cli.runtime import Runtime

    fake = FakeProvider()
    monkeypatch.setattr(Runtime, "provider", lambda self: fake)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    return fake
