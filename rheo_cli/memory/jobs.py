"""The background job queue: extraction after a reply, a digest when a session closes.

A job is a row; a worker claims it with a lease (wall-clock seconds, not rheo's clock, which
may be pinned by RHEO_NOW) and the name of its process, and renews the lease while it works.
A job whose lease ran out, or whose holder process is gone, is claimed again by the next
worker — a killed worker loses nothing, and its takeover is not counted as an attempt.
Finishing or failing a job is compare-and-set on the lease holder: a worker that lost its
lease changes nothing. Only a call that actually failed counts; a job is retried with backoff
up to `MAX_ATTEMPTS` times — or until it failed `SAME_FAILURES` times in a row the same way
(the same error: a model whose reply never parses is not asked five times; a model that
could not be reached at all is an outage, waited out up to `MAX_ATTEMPTS`) — then marked
failed with its last error, until the person re-queues it (`retry_failed`, ``rheo maintain
--retry-failed``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .store.api import Connection, Row
from .store.db import write
from .store.errors import EngineError
from .text.safety import mask

KINDS = ("extract", "digest", "consolidate")
MAX_ATTEMPTS = 5
SAME_FAILURES = 3
"""A job failing this many times in a row with the same error stops being re-launched."""
LEASE_S = 300.0
"""How long a claimed job stays with its worker before anyone may take it over (seconds); the
worker renews it every third of that while a call runs (see `renew`)."""


class LeaseLost(EngineError):
    """The job is no longer held by this worker (its lease ran out and another took it, or it
    was finished meanwhile); whatever the worker was about to write is rolled back."""


@dataclass(frozen=True)
class Job:
    """A queued piece of background work. ``ref_id``: the assistant turn (extract) or the
    session (digest). Times ``lease_until``/``not_before`` are Unix seconds."""

    id: int
    profile: str
    kind: str
    ref_id: int
    status: str
    attempts: int
    last_error: str | None
    lease_until: float | None
    leased_by: str | None
    not_before: float | None
    notes: list[str]
    created_at: str
    updated_at: str
    number: int = 0
    """The job's number within its profile (1, 2, 3...), as listings show it; 0 when the
    query did not compute it."""
    failures_alike: int = 0
    """Failed attempts in a row that ended with the same error."""

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` shape of a job."""
        return {
            "id": self.id,
            "number": self.number,
            "profile": self.profile,
            "kind": self.kind,
            "ref_id": self.ref_id,
            "status": self.status,
            "attempts": self.attempts,
            "failures_alike": self.failures_alike,
            "last_error": self.last_error,
            "notes": self.notes,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }


def _row(row: Row) -> Job:
    return Job(
        id=row["id"],
        profile=row["profile"],
        kind=row["kind"],
        ref_id=row["ref_id"],
        status=row["status"],
        attempts=row["attempts"],
        last_error=row["last_error"],
        lease_until=row["lease_until"],
        leased_by=row["leased_by"],
        not_before=row["not_before"],
        notes=json.loads(row["notes"] or "[]"),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        number=row["number"] if "number" in row.keys() else 0,  # noqa: SIM118 (a Row)
        failures_alike=row["failures_alike"] or 0,
    )


def enqueue(conn: Connection, *, profile: str, kind: str, ref_id: int, ts: str) -> bool:
    """Queue a job (idempotent per kind and ref); True if it was new. ``ts``: stored UTC."""
    if kind not in KINDS:
        raise ValueError(f"unknown job kind {kind!r}")
    with write(conn):
        cur = conn.execute(
            "INSERT INTO jobs(profile, kind, ref_id, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            (profile, kind, ref_id, ts, ts),
        )
        return cur.rowcount == 1


def claim(
    conn: Connection,
    *,
    worker: str,
    wall_now: float,
    ts: str,
    profile: str | None = None,
    holder_alive: Callable[[str], bool] | None = None,
    lease_s: float = LEASE_S,
    ignore_backoff: bool = False,
    exclude: frozenset[int] = frozenset(),
) -> Job | None:
    """Claim the oldest runnable job (pending and due — any pending one with
    ``ignore_backoff`` — or running with an expired lease or a dead holder), optionally only
    of ``profile``, never one in ``exclude``. Returns it, or None when nothing is runnable.

    Claiming does not count an attempt: a takeover from a killed runner is not a failure
    (only `fail` counts one).
    """
    with write(conn):
        due = float("inf") if ignore_backoff else wall_now
        for row in conn.store.claimable_jobs(due, profile):
            job = _row(row)
            if job.id in exclude:
                continue
            if job.status == "running":
                expired = job.lease_until is None or job.lease_until <= wall_now
                dead = (
                    bool(job.leased_by)
                    and holder_alive is not None
                    and not holder_alive(job.leased_by or "")
                )
                if not (expired or dead):
                    continue
            conn.execute(
                "UPDATE jobs SET status = 'running', lease_until = ?, leased_by = ?, "
                "updated_at = ? WHERE id = ?",
                (wall_now + lease_s, worker, ts, job.id),
            )
            return _row(conn.execute("SELECT * FROM jobs WHERE id = ?", (job.id,)).fetchone())
    return None


def renew(
    conn: Connection, job_id: int, *, worker: str, wall_now: float, lease_s: float = LEASE_S
) -> bool:
    """Extend ``worker``'s lease on a running job to ``wall_now + lease_s`` (Unix seconds).
    Returns False when the job is no longer this worker's."""
    with write(conn):
        cur = conn.execute(
            "UPDATE jobs SET lease_until = ? WHERE id = ? AND status = 'running' AND leased_by = ?",
            (wall_now + lease_s, job_id, worker),
        )
        return cur.rowcount == 1


def complete(conn: Connection, job_id: int, *, worker: str, ts: str, notes: list[str]) -> None:
    """Mark a job done, keeping its notes (what was repaired or dropped), if ``worker`` still
    holds it. Raises LeaseLost otherwise — inside the caller's transaction, so the memory
    writes that came with the job roll back with it."""
    with write(conn):
        cur = conn.execute(
            "UPDATE jobs SET status = 'done', lease_until = NULL, leased_by = NULL, "
            "notes = ?, updated_at = ? WHERE id = ? AND status = 'running' AND leased_by = ?",
            (json.dumps([mask(n) for n in notes], ensure_ascii=False), ts, job_id, worker),
        )
        if cur.rowcount != 1:
            raise LeaseLost(f"job #{job_id} is no longer held by {worker}")


def fail(
    conn: Connection,
    job_id: int,
    *,
    worker: str,
    error: str,
    ts: str,
    retry_at: float,
    notes: list[str] | None = None,
    max_attempts: int = MAX_ATTEMPTS,
    transient: bool = False,
) -> str | None:
    """Count a failed attempt of a job ``worker`` holds: back to pending until ``retry_at``
    (Unix seconds), or failed once it has failed ``max_attempts`` times, or `SAME_FAILURES`
    times in a row with the same error (`same_error`) — unless ``transient`` (no model could
    be reached: an outage is the same error every time, and waiting is the cure, so only
    ``max_attempts`` counts). Returns the new status, or None when
    the job is no longer this worker's (nothing is changed: a job another worker finished
    stays done)."""
    with write(conn):
        row = conn.execute(
            "SELECT attempts, last_error, failures_alike FROM jobs WHERE id = ? "
            "AND status = 'running' AND leased_by = ?",
            (job_id, worker),
        ).fetchone()
        if row is None:
            return None
        attempts = int(row[0]) + 1
        alike = int(row[2] or 0) + 1 if same_error(error[:500], row[1]) else 1
        alike = 0 if transient else alike
        failing = attempts >= max_attempts or alike >= SAME_FAILURES
        status = "failed" if failing else "pending"
        conn.execute(
            "UPDATE jobs SET status = ?, attempts = ?, last_error = ?, not_before = ?, "
            "lease_until = NULL, leased_by = NULL, notes = ?, updated_at = ?, "
            "failures_alike = ? WHERE id = ?",
            (
                status,
                attempts,
                error[:500],
                retry_at,
                json.dumps([mask(n) for n in notes or []], ensure_ascii=False),
                ts,
                alike,
                job_id,
            ),
        )
    return status


def same_error(error: str, previous: str | None) -> bool:
    """Whether ``error`` is the failure ``previous`` was, numbers aside ("retry after 30 s"
    and "retry after 31 s" are one failure)."""
    if previous is None:
        return False
    return re.sub(r"\d+", "#", error) == re.sub(r"\d+", "#", previous)


def retry_failed(conn: Connection, *, profile: str, ts: str) -> int:
    """Put the profile's failed jobs back in the queue with a fresh count of attempts (the
    last error is kept until the next run). Returns how many were re-queued."""
    with write(conn):
        cur = conn.execute(
            "UPDATE jobs SET status = 'pending', attempts = 0, failures_alike = 0, "
            "not_before = NULL, updated_at = ? WHERE profile = ? AND status = 'failed'",
            (ts, profile),
        )
        return cur.rowcount


def next_wake(conn: Connection, *, profile: str | None = None) -> float | None:
    """The earliest Unix time at which an unfinished job may become runnable: a waiting
    job's ``not_before`` or a running job's lease expiry (a pending job due now gives a time
    in the past). None when no job is pending or running."""
    sql = (
        "SELECT min(CASE WHEN status = 'pending' THEN coalesce(not_before, 0) "
        "ELSE coalesce(lease_until, 0) END) FROM jobs WHERE status IN ('pending', 'running')"
    )
    args: list[Any] = []
    if profile is not None:
        sql += " AND profile = ?"
        args.append(profile)
    value = conn.execute(sql, args).fetchone()[0]
    return None if value is None else float(value)


def held_by_others(conn: Connection, *, worker: str) -> list[str]:
    """The holders (``host:pid``) of running jobs other than ``worker``."""
    rows = conn.execute(
        "SELECT DISTINCT leased_by FROM jobs WHERE status = 'running' AND leased_by IS NOT NULL "
        "AND leased_by != ?",
        (worker,),
    ).fetchall()
    return [str(r[0]) for r in rows]


def get_job(conn: Connection, job_id: int) -> Job:
    """One job by id; raises KeyError."""
    row = conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
    if row is None:
        raise KeyError(job_id)
    return _row(row)


def list_jobs(
    conn: Connection,
    profile: str,
    *,
    statuses: tuple[str, ...] | None = None,
    limit: int = 50,
) -> list[Job]:
    """The profile's jobs, newest first, optionally of these statuses, with their numbers."""
    sql = (
        "SELECT * FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY id) AS number FROM jobs "
        "WHERE profile = ?) AS numbered WHERE 1 = 1"
    )
    args: list[Any] = [profile]
    if statuses:
        sql += f" AND status IN ({','.join('?' * len(statuses))})"
        args.extend(statuses)
    sql += " ORDER BY id DESC LIMIT ?"
    args.append(limit)
    return [_row(r) for r in conn.execute(sql, args).fetchall()]


def runnable_count(
    conn: Connection,
    *,
    wall_now: float,
    profile: str | None = None,
    include_waiting: bool = False,
) -> int:
    """How many jobs are pending (due now, or any when ``include_waiting``) or running."""
    sql = "SELECT count(*) FROM jobs WHERE (status = 'running' OR (status = 'pending'"
    args: list[Any] = []
    if not include_waiting:
        sql += " AND (not_before IS NULL OR not_before <= ?)"
        args.append(wall_now)
    sql += "))"
    if profile is not None:
        sql += " AND profile = ?"
        args.append(profile)
    return int(conn.execute(sql, args).fetchone()[0])


def sessions_awaiting_digest(conn: Connection, *, profile: str, closed_before: str) -> list[int]:
    """Sessions of ``profile`` whose last turn is before ``closed_before`` (stored UTC: now
    minus the gap) and that have neither a digest nor a digest job. Sessions of imported
    history (turns with a ``source_key``) are digested only when the import asks."""
    rows = conn.execute(
        "SELECT s.id FROM sessions s WHERE s.profile = ? AND s.last_turn_at < ? "
        "AND NOT EXISTS (SELECT 1 FROM digests d WHERE d.session_id = s.id) "
        "AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id "
        "AND t.source_key IS NOT NULL) "
        "AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.profile = s.profile "
        "AND j.kind = 'digest' AND j.ref_id = s.id) ORDER BY s.id",
        (profile, closed_before),
    ).fetchall()
    return [int(r[0]) for r in rows]


def status_counts(conn: Connection) -> dict[str, int]:
    """How many jobs of every profile are in each status (``pending``, ``failed``...)."""
    rows = conn.execute("SELECT status, count(*) FROM jobs GROUP BY status").fetchall()
    return {str(r[0]): int(r[1]) for r in rows}


def stuck(conn: Connection, profile: str | None, wall_now: float) -> list[int]:
    """Ids of the jobs (of ``profile``; None: every profile the store shows) still marked
    running after their lease ended (``wall_now``: Unix seconds): their runner died and no
    worker has taken them over yet."""
    sql = (
        "SELECT id FROM jobs WHERE status = 'running' AND (lease_until IS NULL OR lease_until < ?)"
    )
    args: list[Any] = [wall_now]
    if profile is not None:
        sql += " AND profile = ?"
        args.append(profile)
    return [int(r[0]) for r in conn.execute(sql + " ORDER BY id", args).fetchall()]


def release_stuck(conn: Connection, profile: str | None, wall_now: float, ts: str) -> int:
    """Put the `stuck` jobs back in the queue (pending, no attempt counted, as a takeover
    would; ``ts``: stored UTC text); returns how many."""
    sql = (
        "UPDATE jobs SET status = 'pending', lease_until = NULL, leased_by = NULL, "
        "updated_at = ? WHERE status = 'running' AND (lease_until IS NULL OR lease_until < ?)"
    )
    args: list[Any] = [ts, wall_now]
    if profile is not None:
        sql += " AND profile = ?"
        args.append(profile)
    with write(conn):
        return max(conn.execute(sql, args).rowcount, 0)
