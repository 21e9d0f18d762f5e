"""The background worker: detached after a reply, killed mid-job and taken over, one at a time."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import stat
import subprocess
import sys
import time

import netguard
import pytest
from fakeapi import hang, text
from fakeprovider import facts
from helpers import REPO, api_env, db_rows, facts_reply, kind_of, route, run_rheo


def _env(api, home, **extra):
    return api_env(api, home, **{"RHEO_NOW": "2026-03-03T10:00:00+00:00", **extra})


def wait_for(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def items(home):
    try:
        return [r[0] for r in db_rows(home, "SELECT label FROM memory_items")]
    except Exception:  # noqa: BLE001 - the table may not exist yet
        return []


@pytest.mark.boundary
def test_reply_returns_before_extraction_which_runs_detached(api, home):
    slow_extract = facts_reply({"topic": "city", "label": "Lives in Porto", "confidence": 0.9})
    slow_extract = type(slow_extract)(**{**slow_extract.__dict__, "delay": 1.5})
    route(api, chat=text("Nice city."), extract=slow_extract)
    proc = run_rheo("ask", "I live in Porto.", env=_env(api, home))
    assert proc.returncode == 0 and proc.stdout == b"Nice city.\n", proc.stderr
    assert items(home) == []  # the process did not wait for the extractor
    assert wait_for(lambda: items(home)) == ["Lives in Porto"]
    done = wait_for(
        lambda: tuple(db_rows(home, "SELECT status, leased_by FROM jobs")[0]) == ("done", None)
    )
    assert done


@pytest.mark.boundary
def test_worker_killed_mid_job_is_completed_by_the_next_run(api, home, rheo, monkeypatch):
    route(api, chat=text("ok"), extract=hang(30))
    assert rheo("ask", "I live in Braga.").exit_code == 0  # in-process; the worker is the point
    worker = subprocess.Popen(
        [sys.executable, "-m", "rheo_cli.app.worker_process", "--worker"],
        env=netguard.subprocess_env(_env(api, home)),
        cwd=str(REPO),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    api.wait_for_requests(2, timeout=20)  # chat + the extraction call the worker is stuck on
    status = db_rows(home, "SELECT status, leased_by FROM jobs")[0]
    assert status["status"] == "running" and status["leased_by"].endswith(f":{worker.pid}")
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=10)
    assert db_rows(home, "SELECT status FROM jobs")[0][0] == "running"  # left mid-job
    route(api, extract=facts_reply({"topic": "city", "label": "Lives in Braga"}))
    monkeypatch.setenv("RHEO_NOW", "2026-03-03T10:05:00+00:00")
    out = json.loads(rheo("maintain", "--json").stdout)
    assert [j["kind"] for j in out["done"]] == ["extract"]
    assert items(home) == ["Lives in Braga"]
    job = db_rows(home, "SELECT status, attempts FROM jobs")[0]
    assert tuple(job) == ("done", 0)  # the killed worker's takeover is no failed attempt


@pytest.mark.boundary
def test_only_one_detached_worker_runs_at_a_time(api, home, rheo):
    # a slow extractor (2 s) that finds nothing: each job holds the lock a while, and is done
    slow = dataclasses.replace(facts_reply(), delay=2)
    route(api, chat=text("ok"), extract=slow)
    for n in range(3):
        assert rheo("ask", f"fact number {n}").exit_code == 0  # in-process; RHEO_WORKER=off
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "rheo_cli.app.worker_process", "--worker"],
            env=netguard.subprocess_env(_env(api, home)),
            cwd=str(REPO),
        )
        for _ in range(3)
    ]
    codes = [w.wait(timeout=60) for w in workers]
    assert codes == [0, 0, 0]
    extracts = [r for r in api.message_requests if kind_of(r) == "extract"]
    assert len(extracts) == 3  # each job ran once, by the worker holding the lock
    assert [r[0] for r in db_rows(home, "SELECT status FROM jobs")] == ["done"] * 3


def test_worker_inline_mode(rheo, fake_model, monkeypatch, home):
    monkeypatch.setenv("RHEO_WORKER", "inline")
    route(fake_model, extract=facts({"topic": "pet", "label": "Has a cat named Miso"}))
    rheo("ask", "My cat is Miso.")
    assert items(home) == ["Has a cat named Miso"]


def _admin_rows(url, sql, args=()):
    """Rows read by the superuser, whom row-level security does not bind."""
    import psycopg
    from conftest import as_admin

    with psycopg.connect(as_admin(url), autocommit=True) as a:
        return a.execute(sql, args).fetchall()


needs_pg = pytest.mark.skipif(
    not os.environ.get("RHEO_TEST_DATABASE_URL"),
    reason="PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)",
)


@pytest.mark.boundary
@needs_pg
def test_spawned_worker_on_postgres_works_on_the_profile_given_with_the_flag(api, home):
    from conftest import pg_schema_url

    home.mkdir(parents=True)  # only the profile is under test here
    route(api, chat=text("Nice city."), extract=facts_reply({"topic": "city", "label": "Porto"}))
    with pg_schema_url() as url:
        env = _env(api, home, RHEO_DATABASE_URL=url)
        proc = run_rheo("-p", "w4", "ask", "I live in Porto.", env=env)
        assert proc.returncode == 0, proc.stderr
        done = wait_for(
            lambda: _admin_rows(url, "SELECT profile, status FROM jobs") == [("w4", "done")]
        )
        assert done
        labels = _admin_rows(url, "SELECT profile, label FROM memory_items")
        assert labels == [("w4", "Porto")]


@pytest.mark.boundary
@needs_pg
def test_spawned_worker_on_postgres_creates_rheo_home_on_first_use(api, home):
    from conftest import pg_schema_url

    assert not home.exists()
    route(api, chat=text("ok"), extract=facts_reply({"topic": "pet", "label": "Has a cat"}))
    with pg_schema_url() as url:
        proc = run_rheo("ask", "My cat is Miso.", env=_env(api, home, RHEO_DATABASE_URL=url))
        assert proc.returncode == 0, proc.stderr
        assert wait_for(lambda: _admin_rows(url, "SELECT status FROM jobs") == [("done",)])
    assert stat.S_IMODE(home.stat().st_mode) == 0o700


@needs_pg
def test_maintain_on_postgres_names_the_profile_it_ran_for(fake_model, home, rheo, monkeypatch):
    from conftest import pg_schema_url

    route(fake_model, chat="ok")
    with pg_schema_url() as url:
        monkeypatch.setenv("RHEO_DATABASE_URL", url)
        assert rheo("-p", "w4", "ask", "hello").exit_code == 0
        plain = rheo("maintain")
        assert plain.exit_code == 0, plain.stderr
        assert plain.stdout.startswith("profile default: 0 jobs done")
        assert "--profile NAME" in plain.stdout  # where w4's pending job is run from
        assert json.loads(rheo("maintain", "--json").stdout)["profile"] == "default"
        other = rheo("maintain", "--profile", "w4")
        assert other.stdout.startswith("profile w4: 1 job done"), other.stdout
