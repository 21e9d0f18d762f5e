"""No profile's jobs are stranded behind another runner: a detached worker that finds the
worker lock held (by ``rheo maintain`` of another profile, which runs only its own jobs, or
by a runner about to let go) waits for it and then runs what is left, instead of exiting."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import netguard
import pytest
from conftest import pg_schema_url
from fakeapi import text
from fakeprovider import facts
from helpers import REPO, api_env, db_rows, facts_reply, route

from rheo_cli.app import app as runtime
from rheo_cli.background import worker


def waiting_on(path: Path) -> bool:
    """Whether some process is blocked waiting for the flock on ``path`` (/proc/locks lists
    a waiter as ``-> FLOCK``)."""
    inode = f":{os.stat(path).st_ino} "
    return any("->" in ln and inode in ln for ln in Path("/proc/locks").read_text().splitlines())


def until_waiting_or_gone(lock: Path, thread: threading.Thread) -> bool:
    """Wait (up to 30 s) until a runner waits for ``lock`` (True) or ``thread`` has ended."""
    deadline = time.monotonic() + 30
    while thread.is_alive() and time.monotonic() < deadline:
        if waiting_on(lock):
            return True
        time.sleep(0.05)
    return False


def statuses(rt: runtime.App, profile: str) -> list[str]:
    rows = rt.conn.execute(
        "SELECT status FROM jobs WHERE profile = ? ORDER BY id", (profile,)
    ).fetchall()
    return [r[0] for r in rows]


@pytest.fixture
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """``sqlite`` (the home's file) or ``postgres`` (RHEO_DATABASE_URL: a fresh schema)."""
    if request.param == "sqlite":
        yield "sqlite"
        return
    if not os.environ.get("RHEO_TEST_DATABASE_URL"):
        pytest.skip("PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)")
    with pg_schema_url() as url:
        monkeypatch.setenv("RHEO_DATABASE_URL", url)
        yield "postgres"


def run_detached(profile: str, out: dict[str, int]) -> threading.Thread:
    """A detached worker's loop (`worker.detached_main`) for ``profile``, started in a thread
    with its own runtime; its exit status goes in ``out["status"]``."""

    def main() -> None:
        rt = runtime.build(profile=profile)
        try:
            out["status"] = worker.detached_main(rt, idle_max_s=5, poll_s=(0.1, 0.5))
        finally:
            rt.close()

    thread = threading.Thread(target=main)
    thread.start()
    return thread


@pytest.mark.parametrize("store", ["sqlite", "postgres"], indirect=True)
def test_a_worker_finding_the_lock_held_waits_and_runs_the_jobs_left(
    rheo: Any, fake_model: Any, home: Path, store: str
) -> None:
    route(fake_model, chat="Noted.", extract=facts({"topic": "city", "label": "Lives in Porto"}))
    assert rheo("ask", "--profile", "a", "I live in Porto.").exit_code == 0
    # SQLite: one lock for the file; a worker started by profile b's ask meets
    # `rheo maintain --profile a`. PostgreSQL: a lock per tenant; a's own worker meets it.
    late = "b" if store == "sqlite" else "a"
    maintain = runtime.build(profile="a")
    lock = home / worker.lock_name(maintain)
    came: dict[str, int] = {}
    with worker.worker_lock(maintain):
        ran = worker.run_pending(maintain, profile="a")  # what maintain does: a's jobs
        # A job queued after maintain's last look at the queue, and its worker:
        assert rheo("ask", "--profile", late, "My dog is Rex.").exit_code == 0
        thread = run_detached(late, came)
        waited = until_waiting_or_gone(lock, thread)
    thread.join(timeout=120)
    left = statuses(maintain, late)
    maintain.close()
    assert [j.ref_id for j in ran.done] == [2]  # maintain ran a's job, and only that
    assert waited, f"the detached worker exited instead of waiting; {late}'s jobs: {left}"
    assert not thread.is_alive() and came == {"status": 0}
    assert left == (["done"] if late == "b" else ["done", "done"]), left


@pytest.mark.boundary
def test_a_spawned_worker_behind_another_profiles_maintain_runs_its_jobs(
    api: Any, home: Path, rheo: Any
) -> None:
    """End to end: ``rheo ask --profile b`` spawns its worker while a runner for profile a
    holds the lock; once that one lets go, b's extraction is done without anyone asking."""
    route(
        api, chat=text("Noted."), extract=facts_reply({"topic": "city", "label": "Lives in Porto"})
    )
    maintain = runtime.build(profile="a")
    lock = home / worker.lock_name(maintain)
    with worker.worker_lock(maintain):
        done = subprocess.run(
            [sys.executable, "-m", "rheo_cli", "ask", "--profile", "b", "I live in Porto."],
            env=netguard.subprocess_env(api_env(api, home)),  # RHEO_WORKER unset: spawn
            cwd=str(REPO),
            capture_output=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 20
        while not waiting_on(lock) and time.monotonic() < deadline:
            time.sleep(0.1)
    maintain.close()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        state = [r[0] for r in db_rows(home, "SELECT status FROM jobs WHERE profile = 'b'")]
        if state == ["done"]:
            break
        time.sleep(0.2)
    assert state == ["done"], f"b's job stayed {state} after a's runner let go of the lock"
    labels = db_rows(home, "SELECT profile, label FROM memory_items")
    assert [tuple(r) for r in labels] == [("b", "Lives in Porto")]


def test_only_one_worker_waits(home: Path, rheo: Any, fake_model: Any) -> None:
    """Workers spawned one per reply do not pile up behind a busy lock: one that comes while
    another already waits returns at once (the waiting one will run its jobs)."""
    route(fake_model, chat="ok")
    assert rheo("ask", "hello").exit_code == 0
    rt = runtime.build()
    lock = home / worker.lock_name(rt)
    first: dict[str, int] = {}
    second: dict[str, int] = {}
    with worker.worker_lock(rt):
        waiting = run_detached("default", first)
        assert until_waiting_or_gone(lock, waiting)
        other = run_detached("default", second)
        other.join(timeout=60)  # it would block for good if it waited too: the lock is held
        assert not other.is_alive() and second == {"status": 0}
        assert waiting.is_alive() and statuses(rt, "default") == ["pending"]
    waiting.join(timeout=60)
    assert first == {"status": 0}
    assert statuses(rt, "default") == ["done"]
    rt.close()
