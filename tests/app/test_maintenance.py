"""`app.maintenance`: what ``rheo maintain`` and ``rheo jobs list`` are made of, called as a
front end calls them (the model behind extraction and digests is the in-process fake model)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest
from fakeprovider import Canned, api_error
from helpers import route

from rheo_cli.app import app as app_mod
from rheo_cli.app import maintenance

T0 = datetime.fromisoformat("2026-08-20T18:00:00+02:00")


def at(monkeypatch: pytest.MonkeyPatch, when: datetime) -> None:
    monkeypatch.setenv("RHEO_NOW", when.isoformat())


def test_maintain_runs_the_extraction_then_the_digest_once_the_session_closed(
    rheo: Any, fake_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    route(fake_model)
    at(monkeypatch, T0)
    assert rheo("ask", "hello").exit_code == 0
    started: list[tuple[int, int]] = []
    outcomes: list[tuple[str, str]] = []
    at(monkeypatch, T0 + timedelta(hours=1))
    with app_mod.build() as app:
        done = maintenance.maintain(
            app,
            on_start=lambda requeued, total: started.append((requeued, total)),
            on_job=lambda job, outcome: outcomes.append((job.kind, outcome)),
        )
    assert started == [(0, 1)]
    assert outcomes == [("extract", "done")]
    assert (done.profile, done.requeued, done.failed, done.server) == ("default", 0, 0, False)
    assert [j["kind"] for j in done.to_json()["done"]] == ["extract"]

    at(monkeypatch, T0 + timedelta(hours=3))  # past the two-hour gap: the session closed
    with app_mod.build() as app:
        assert maintenance.queue_due(app) == 1
        summary = maintenance.run_pending(app)
        listed = maintenance.list_jobs(app)
    assert [j.kind for j in summary.done] == ["digest"]
    assert [(j.kind, j.status) for j in listed.jobs] == [("digest", "done"), ("extract", "done")]
    assert listed.numbers == {1: 1}  # session id 1 is shown as s1


def test_retry_failed_puts_jobs_that_failed_for_good_back(
    rheo: Any, fake_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    route(fake_model, extract=Canned(error=api_error(500, "api_error", "down")))
    at(monkeypatch, T0)
    assert rheo("ask", "hello").exit_code == 0
    with app_mod.build() as app:
        for _ in range(5):  # the fifth failed call fails the job for good
            maintenance.run_pending(app)
        assert maintenance.failed_for_good(app) == 1
        route(fake_model)
        done = maintenance.maintain(app, retry=True)
    assert (done.requeued, done.failed) == (1, 0)
    assert [j.kind for j in done.summary.done] == ["extract"]


def test_without_jobs_the_list_is_empty(home: Any) -> None:
    with app_mod.build() as app:
        assert maintenance.list_jobs(app) == maintenance.JobList([], {})
