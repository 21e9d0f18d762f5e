"""Missing real clients skip the real-client tests, except under ``CI=true`` (``.ci/run``
sets it): there they fail the run."""

from __future__ import annotations

import pytest
from _pytest.outcomes import Failed, Skipped

from realclients import conftest


@pytest.fixture
def nothing_installed(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """No client where the tests look, and no installing them."""
    for name in ("RHEO_TEST_NODE", "RHEO_TEST_CLAUDE", "RHEO_TEST_INSPECTOR"):
        monkeypatch.setenv(name, str(tmp_path / "absent" / name.lower()))
    monkeypatch.setenv("RHEO_TEST_CLIENTS", "off")


def test_missing_clients_skip_outside_ci(nothing_installed, monkeypatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(Skipped, match="RHEO_TEST_CLIENTS=off"):
        conftest.find_clients()


def test_missing_clients_fail_under_ci(nothing_installed, monkeypatch) -> None:
    monkeypatch.setenv("CI", "true")
    with pytest.raises(Failed, match="CI must run the real-client tests"):
        conftest.find_clients()
