"""The job queue under contention: leases held and renewed, finishing is compare-and-set on the
holder, one runner at a time, an idle worker that sleeps, and failed jobs that stay visible."""

from __future__ import annotations

import fcntl
import json
import subprocess
import sys
import threading
import time

import netguard
import pytest
from conftest import as_tenant
from fakeapi import text
from fakeprovider import Canned, api_error, facts
from helpers import REPO, api_env, db_rows, kind_of, route

from rheo_cli.app import app as runtime
from rheo_cli.background import digest_job, worker
from rheo_cli.memory import jobs
from rheo_cli.memory.store import db

TS = "2026-01-01T00:00:00.000Z"


def _queue(conn):
    """``conn`` (the `conn` fixture: each store) acting for profile ``p``, one job queued."""
    jobs.enqueue(as_tenant(conn, "p"), profile="p", kind="extract", ref_id=1, ts=TS)
    return conn


def test_complete_and_fail_only_change_a_job_the_worker_still_holds(conn):
    conn = _queue(conn)
    first = jobs.claim(conn, worker="h:1", wall_now=1000.0, ts=TS, lease_s=10)
    assert first is not None
    # h:1's lease runs out; h:2 takes the job over
    second = jobs.claim(conn, worker="h:2", wall_now=1011.0, ts=TS, lease_s=10)
    assert second is not None and second.id == first.id
    with pytest.raises(jobs.LeaseLost):
        jobs.complete(conn, first.id, worker="h:1", ts=TS, notes=["late"])
    assert jobs.fail(conn, first.id, worker="h:1", error="x", ts=TS, retry_at=0) is None
    assert jobs.get_job(conn, first.id).leased_by == "h:2"
    jobs.complete(conn, first.id, worker="h:2", ts=TS, notes=["ok"])
    # the late runner's failure never turns the finished job back to pending
    assert jobs.fail(conn, first.id, worker="h:1", error="dup", ts=TS, retry_at=0) is None
    job = jobs.get_job(conn, first.id)
    assert (job.status, job.attempts, job.notes, job.last_error) == ("done", 0, ["ok"], None)


def test_a_job_failing_the_same_way_three_times_stops_being_relaunched(conn):
    """The same error (numbers aside) three times in a row: failed at once, not tried up to
    five times; another error in between starts the count again."""
    conn = _queue(conn)
    jobs.enqueue(as_tenant(conn, "p"), profile="p", kind="extract", ref_id=2, ts=TS)

    def run(job_id, errors):
        out = []
        for n, failure in enumerate(errors):
            other = frozenset({3 - job_id})
            job = jobs.claim(conn, worker="h:1", wall_now=1e6 * (n + 1), ts=TS, exclude=other)
            assert job is not None and job.id == job_id
            out.append(jobs.fail(conn, job.id, worker="h:1", error=failure, ts=TS, retry_at=0))
        return out

    alike = ["reply unreadable after 3 s", "reply unreadable after 4 s"]
    assert run(1, [*alike, "reply unreadable after 5 s"]) == ["pending", "pending", "failed"]
    assert (jobs.get_job(conn, 1).attempts, jobs.get_job(conn, 1).failures_alike) == (3, 3)
    mixed = ["reply unreadable after 3 s", "timeout", *alike]
    assert run(2, mixed) == ["pending"] * 4
    assert jobs.get_job(conn, 2).failures_alike == 2
    assert jobs.retry_failed(conn, profile="p", ts=TS) == 1
    assert jobs.get_job(conn, 1).failures_alike == 0


def test_an_outage_is_waited_out_for_every_attempt(conn):
    """No model reachable is the same error each time, but a transient one: the job is tried
    `MAX_ATTEMPTS` times, not failed after `SAME_FAILURES`."""
    conn = _queue(conn)
    statuses = []
    for n in range(jobs.MAX_ATTEMPTS):
        job = jobs.claim(conn, worker="h:1", wall_now=1e6 * (n + 1), ts=TS)
        assert job is not None
        statuses.append(jobs.fail(conn, job.id, worker="h:1", error="every model down", ts=TS,
                                  retry_at=0, transient=True))  # fmt: skip
    assert statuses == ["pending"] * (jobs.MAX_ATTEMPTS - 1) + ["failed"]


def test_renew_extends_only_the_holders_lease(conn):
    conn = _queue(conn)
    job = jobs.claim(conn, worker="h:1", wall_now=1000.0, ts=TS, lease_s=10)
    assert job is not None
    assert jobs.renew(conn, job.id, worker="h:1", wall_now=1008.0, lease_s=10)
    assert jobs.claim(conn, worker="h:2", wall_now=1015.0, ts=TS) is None  # renewed to 1018
    assert not jobs.renew(conn, job.id, worker="h:2", wall_now=1015.0, lease_s=10)
    assert jobs.get_job(conn, job.id).lease_until == 1018.0


def test_only_failed_calls_count_and_failed_jobs_wait_for_retry_failed(conn):
    conn = _queue(conn)
    for n in range(jobs.MAX_ATTEMPTS):
        job = jobs.claim(conn, worker="h:1", wall_now=1e6 * (n + 1), ts=TS)
        assert job is not None and job.attempts == n
        error = f"boom {'abcde'[n]}"  # five different failures: five attempts
        status = jobs.fail(conn, job.id, worker="h:1", error=error, ts=TS, retry_at=0)
    assert status == "failed"
    assert jobs.claim(conn, worker="h:1", wall_now=1e9, ts=TS, ignore_backoff=True) is None
    assert jobs.retry_failed(conn, profile="other", ts=TS) == 0
    assert jobs.retry_failed(conn, profile="p", ts=TS) == 1
    again = jobs.claim(conn, worker="h:1", wall_now=1e9, ts=TS)
    assert again is not None and again.attempts == 0


def test_the_first_failure_waits_the_first_backoff_step(rheo, fake_model, home):
    route(
        fake_model, chat="ok", extract=Canned(error=api_error(400, "invalid_request_error", "no"))
    )
    assert rheo("ask", "I live in Porto.").exit_code == 0
    before = time.time()
    assert rheo("maintain").exit_code == 0
    row = db_rows(home, "SELECT status, attempts, not_before FROM jobs")[0]
    assert (row["status"], row["attempts"]) == ("pending", 1)
    assert worker.BACKOFF_S[0] - 1 <= row["not_before"] - before <= worker.BACKOFF_S[0] + 5


def test_a_second_digest_run_never_reopens_the_finished_job(rheo, fake_model, home, monkeypatch):
    route(fake_model, chat="ok")
    monkeypatch.setenv("RHEO_NOW", "2026-03-03T10:00:00+00:00")
    assert rheo("ask", "We planned the trip.").exit_code == 0
    monkeypatch.setenv("RHEO_NOW", "2026-03-04T10:00:00+00:00")
    assert rheo("ask", "A new day.").exit_code == 0  # closes session 1: a digest job
    rt = runtime.build()
    digest = db_rows(home, "SELECT id FROM jobs WHERE kind = 'digest'")[0][0]
    # a runner claims the digest and stalls until its lease runs out ...
    stale = jobs.claim(rt.conn, worker="h:1", wall_now=time.time() - 1000, ts=TS, lease_s=1)
    while stale is not None and stale.id != digest:
        stale = jobs.claim(
            rt.conn,
            worker="h:1",
            wall_now=time.time() - 1000,
            ts=TS,
            lease_s=1,
            exclude=frozenset({stale.id}),
        )
    assert stale is not None
    # ... meanwhile `rheo maintain` takes it over and writes the digest
    out = json.loads(rheo("maintain", "--json").stdout)
    assert digest in [j["id"] for j in out["done"]], out
    # the stale runner now finishes: its write is refused and changes nothing
    with pytest.raises((jobs.LeaseLost, Exception)):
        digest_job.run(rt, stale, "h:1")
    assert jobs.fail(rt.conn, digest, worker="h:1", error="dup", ts=TS, retry_at=0) is None
    assert db_rows(home, "SELECT status FROM jobs WHERE id = ?", (digest,))[0][0] == "done"
    assert len(db_rows(home, "SELECT id FROM digests")) == 1
    rt.close()


def test_the_lease_is_renewed_while_a_slow_call_runs(rheo, fake_model, home, monkeypatch):
    slow = facts({"topic": "city", "label": "Lives in Porto", "confidence": 0.9})
    slow.delay = 2.5
    route(fake_model, chat="ok", extract=slow)
    assert rheo("ask", "I live in Porto.").exit_code == 0
    rt = runtime.build()
    done = threading.Event()
    thread = threading.Thread(
        target=lambda: (worker.run_pending(rt, lease_s=0.6), done.set()), daemon=True
    )
    thread.start()
    fake_model.wait_for_requests(2, timeout=20)  # the extraction call is under way
    rival = db.open_store(home / "rheo.db")
    takeovers = []
    while not done.is_set():  # a rival keeps trying for well past several lease lengths
        got = jobs.claim(
            rival,
            worker="elsewhere:1",
            wall_now=time.time(),
            ts=TS,
            holder_alive=lambda h: True,
        )
        if got is not None:
            takeovers.append(got)
            break
        time.sleep(0.1)
    thread.join(timeout=20)
    assert takeovers == []
    assert len([r for r in fake_model.requests if kind_of(r) == "extract"]) == 1
    assert db_rows(home, "SELECT status FROM jobs")[0][0] == "done"
    rival.close()
    rt.close()


@pytest.mark.boundary
def test_maintain_waits_for_the_worker_lock(rheo, api, home):
    route(api, chat=text("ok"))
    assert rheo("ask", "hello").exit_code == 0
    with open(home / "worker.lock", "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        proc = subprocess.Popen(
            [sys.executable, "-m", "rheo_cli", "maintain", "--json"],
            env=netguard.subprocess_env(api_env(api, home, RHEO_WORKER="off")),
            cwd=str(REPO),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        time.sleep(3)
        assert proc.poll() is None  # waiting for the lock, not running jobs beside its holder
        assert db_rows(home, "SELECT status FROM jobs")[0][0] == "pending"
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert len(json.loads(out)["done"]) == 1


def test_an_idle_worker_sleeps_until_the_next_job_is_due(rheo, fake_model, home, monkeypatch):
    route(fake_model, chat="ok")
    assert rheo("ask", "hello").exit_code == 0
    rt = runtime.build()
    # another live process holds the job for 6 more seconds
    job = jobs.claim(rt.conn, worker=worker.worker_id(), wall_now=time.time() - 294, ts=TS)
    assert job is not None
    claims = []
    real_claim = jobs.claim

    def counting(*args, **kwargs):
        claims.append(time.monotonic())
        return real_claim(*args, **kwargs)

    monkeypatch.setattr(jobs, "claim", counting)
    start = time.monotonic()
    assert worker.detached_main(rt) == 0
    elapsed = time.monotonic() - start
    assert db_rows(home, "SELECT status FROM jobs")[0][0] == "done"  # taken over on expiry
    assert elapsed >= 5.5
    print(f"idle worker: {len(claims)} claims in {elapsed:.1f} s")  # for RELIABILITY.md
    assert len(claims) / elapsed < 1.0, (len(claims), elapsed)
    rt.close()


def test_maintain_retry_failed_requeues_failed_jobs(rheo, fake_model, home):
    route(
        fake_model, chat="ok", extract=Canned(error=api_error(400, "invalid_request_error", "no"))
    )
    assert rheo("ask", "I live in Porto.").exit_code == 0
    for _ in range(jobs.MAX_ATTEMPTS):
        rheo("maintain")
    assert db_rows(home, "SELECT status FROM jobs")[0][0] == "failed"
    route(fake_model, chat="ok", extract=facts({"topic": "city", "label": "Lives in Porto"}))
    plain = rheo("maintain")
    assert "1 job failed for good" in plain.stdout and "--retry-failed" in plain.stdout
    assert db_rows(home, "SELECT status FROM jobs")[0][0] == "failed"  # nothing silent
    again = rheo("maintain", "--retry-failed")
    assert again.exit_code == 0, again.stderr
    assert "1 failed job re-queued" in again.stdout
    assert db_rows(home, "SELECT status FROM jobs")[0][0] == "done"
    assert [r[0] for r in db_rows(home, "SELECT label FROM memory_items")] == ["Lives in Porto"]


def test_extraction_pairs_a_reply_with_its_own_question_when_others_came_between(
    rheo, fake_model, home
):
    from helpers import request_text

    from rheo_cli.memory.ledger import turns as ledger

    rt = runtime.build()
    now = rt.now()

    def add(role, content, **kw):
        return ledger.append_turn(
            rt.conn, profile="default", role=role, content=content, now=now, gap_s=7200, **kw
        ).turn

    mine = add("user", "I adopted a dog called Rex.")
    for n in range(5):  # other processes' questions arrive before this reply is stored
        add("user", f"someone else's question {n}")
    reply = add("assistant", "Congratulations!", status="ok", meta={"reply_to": mine.id})
    jobs.enqueue(rt.conn, profile="default", kind="extract", ref_id=reply.id, ts=TS)
    rt.close()
    route(fake_model, extract=facts({"topic": "pet", "label": "Has a dog called Rex"}))
    assert rheo("maintain").exit_code == 0
    sent = request_text([r for r in fake_model.requests if kind_of(r) == "extract"][0])
    assert "Person: I adopted a dog called Rex." in sent
    assert "someone else" not in sent.split("Exchange:")[1]
    assert db_rows(home, "SELECT source_turn_id FROM memory_items")[0][0] == mine.id
