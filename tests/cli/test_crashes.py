"""SIGKILL at 50+ points (storing the person's turn, mid-stream, storing the reply, mid-extraction,
mid-digest, mid-migration), then restart: SQLite's and FTS5's integrity checks pass, no partial
rows, the next command works and pending jobs resume. Uses the test-only RHEO_CRASH_AT hook."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import netguard
import pytest
from fakeapi import text
from helpers import REPO, api_env, db_rows, facts_reply, kind_of

from rheo_cli.memory.store import db
from rheo_cli.memory.store.sqlite import health
from rheo_cli.memory.store.sqlite.migrations import SCHEMA_VERSION, migrate

pytestmark = [pytest.mark.slow, pytest.mark.boundary]  # rheo processes killed mid-way

FULL_SWEEP = os.environ.get("RHEO_CRASH_SWEEP") == "full"
"""Every point on each of three days (42 kills of `ask` and `maintain`), as RELIABILITY.md
reports; by default day 1 sweeps every point and days 2 and 3 one point of each kind (22)."""

REPLY = "one two three four five six seven eight"
"""The chat reply, streamed in 8 pieces: 8 mid-stream crash points."""


def _handler(rec):
    kind = kind_of(rec)
    if kind == "extract":
        return facts_reply({"topic": "city", "label": "Lives in Porto", "confidence": 0.9})
    if kind == "digest":
        return text(json.dumps({"narrative": "They talked about Porto.", "facts": []}))
    return text(REPLY, chunks=8)


def _run(api, home: Path, *args: str, crash: str | None = None, now: str) -> int:
    env = api_env(api, home, RHEO_WORKER="off", RHEO_NOW=now)
    if crash:
        env["RHEO_CRASH_AT"] = crash
    proc = subprocess.run(
        [sys.executable, "-m", "rheo_cli", *args],
        env=netguard.subprocess_env(env),
        cwd=str(REPO),
        capture_output=True,
        timeout=60,
    )
    if crash is None:
        assert proc.returncode == 0, proc.stderr
    return proc.returncode


def check_consistent(path: Path) -> None:
    """The store after a crash: integrity and FTS checks pass and no row is half there."""
    conn = db.open_store(path, migrate_schema=False)
    try:
        assert health.integrity_problems(conn) == []
        assert health.fts_problems(conn) == {}
        assert health.missing_tables(conn) == []
        # a session's counters agree with its turns
        bad = conn.execute(
            "SELECT s.id FROM sessions s WHERE s.turns != (SELECT count(*) FROM turns t "
            "WHERE t.session_id = s.id) OR s.last_turn_at < (SELECT max(ts) FROM turns t "
            "WHERE t.session_id = s.id)"
        ).fetchall()
        assert bad == []
        # every reply answers a stored question of its session
        orphans = conn.execute(
            "SELECT a.id FROM turns a LEFT JOIN turns u ON u.id = "
            "json_extract(a.meta, '$.reply_to') WHERE a.role = 'assistant' AND "
            "(u.id IS NULL OR u.role != 'user' OR u.session_id != a.session_id)"
        ).fetchall()
        assert orphans == []
        # a digest exists only with its job done, and a done digest job has its digest
        assert (
            conn.execute(
                "SELECT d.id FROM digests d JOIN jobs j ON j.kind = 'digest' AND "
                "j.ref_id = d.session_id WHERE j.status != 'done'"
            ).fetchall()
            == []
        )
        assert (
            conn.execute(
                "SELECT j.id FROM jobs j WHERE j.kind = 'digest' AND j.status = 'done' AND "
                "NOT EXISTS (SELECT 1 FROM digests d WHERE d.session_id = j.ref_id)"
            ).fetchall()
            == []
        )
        # facts an extraction wrote exist only with its job done
        assert (
            conn.execute(
                "SELECT e.id FROM memory_events e JOIN turns a ON a.role = 'assistant' AND "
                "json_extract(a.meta, '$.reply_to') = e.source_turn_id "
                "JOIN jobs j ON j.kind = 'extract' AND j.ref_id = a.id "
                "WHERE e.cause LIKE 'extract%' AND j.status != 'done'"
            ).fetchall()
            == []
        )
    finally:
        conn.close()


def test_sigkill_at_every_point_leaves_a_consistent_store_and_work_resumes(api, home):
    api.handler = _handler
    path = home / "rheo.db"
    crashes = 0
    expected_turns = 0
    for day in range(1, 4):
        now = f"2026-03-0{day}T10:00:00+00:00"
        points = [f"turn.append:{n}" for n in (1, 2)]
        points += [f"reply.delta:{n}" for n in range(1, 9)]
        points += ["reply.record:1"]
        if day > 1 and not FULL_SWEEP:  # later days: one point of each kind
            points = ["turn.append:1", "turn.append:2", "reply.delta:4", "reply.record:1"]
        for n, point in enumerate(points):
            code = _run(api, home, "ask", f"day {day} question {n}", crash=point, now=now)
            assert code == -9, (point, code)  # killed at the point, not before or after
            crashes += 1
            expected_turns += 0 if point == "turn.append:1" else 1
            check_consistent(path)
        _run(api, home, "ask", f"day {day} after the crashes", now=now)  # the next turn works
        expected_turns += 2
        check_consistent(path)
    assert db_rows(home, "SELECT count(*) FROM turns")[0][0] == expected_turns
    # mid-extraction and mid-digest: `rheo maintain` killed with the facts or digest written
    # but not committed; the next run takes the job over
    later = "2026-03-05T10:00:00+00:00"
    kills = (6, 3) if FULL_SWEEP else (2, 1)
    for point in ["extract.store:1"] * kills[0] + ["digest.store:1"] * kills[1]:
        assert _run(api, home, "maintain", crash=point, now=later) == -9, point
        crashes += 1
        check_consistent(path)
    _run(api, home, "maintain", now=later)
    check_consistent(path)
    statuses = {tuple(r) for r in db_rows(home, "SELECT kind, status, attempts FROM jobs")}
    assert statuses == {("extract", "done", 0), ("digest", "done", 0)}, statuses
    assert db_rows(home, "SELECT count(*) FROM digests")[0][0] == 3
    assert crashes == (42 if FULL_SWEEP else 22)
    test_sigkill_at_every_point_leaves_a_consistent_store_and_work_resumes.crashes = crashes


@pytest.mark.parametrize("start", [0, 2, 4])
def test_sigkill_mid_migration_then_restart_completes_it(api, home, start):
    api.handler = _handler
    home.mkdir(parents=True, exist_ok=True)
    path = home / "rheo.db"
    if start:
        conn = db.open_store(path, migrate_schema=False)
        migrate(conn, target=start)
        conn.execute(
            "INSERT INTO sessions(profile, started_at, last_turn_at, turns) "
            "VALUES ('default', '2026-03-01T09:00:00.000Z', '2026-03-01T09:00:00.000Z', 1)"
        )
        conn.execute(
            "INSERT INTO turns(profile, session_id, role, content, ts) VALUES "
            "('default', 1, 'user', 'kept across the crash', '2026-03-01T09:00:00.000Z')"
        )
        conn.close()
    for step in range(1, SCHEMA_VERSION - start + 1):
        code = _run(api, home, "history", "recent", crash="migrate.step:1", now="2026-03-02")
        assert code == -9
        conn = sqlite3.connect(path)
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        has_log = conn.execute(
            "SELECT count(*) FROM sqlite_master WHERE name = 'schema_migrations'"
        ).fetchone()[0]
        applied = (
            conn.execute("SELECT count(*) FROM schema_migrations").fetchone()[0] if has_log else 0
        )
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()
        assert version == applied == start + step - 1  # the killed step left no trace
        # let this step through, so the next run dies in the one after
        if start + step < SCHEMA_VERSION:
            conn = db.open_store(path, migrate_schema=False)
            migrate(conn, target=start + step)
            conn.close()
    _run(api, home, "history", "recent", now="2026-03-02T10:00:00+00:00")
    check_consistent(path)
    if start:
        rows = db_rows(home, "SELECT content FROM turns")
        assert [r[0] for r in rows] == ["kept across the crash"]


def test_sigkill_mid_purge_import_and_backup(api, home, tmp_path):
    api.handler = _handler
    path = home / "rheo.db"
    for day in (1, 2, 3):
        now = f"2026-03-0{day}T10:00:00+00:00"
        for n in range(3):
            _run(api, home, "ask", f"day {day} note {n} about Porto", now=now)
    _run(api, home, "maintain", now="2026-03-05T10:00:00+00:00")
    exported = tmp_path / "all.jsonl"
    _run(api, home, "export", "--output", str(exported), now="2026-03-05T10:00:00+00:00")
    turns_before = db_rows(home, "SELECT count(*) FROM turns")[0][0]
    kills = 0

    # purge: killed with the rows erased but not committed, then after the commit
    args = ("purge", "session", "1", "--yes")
    assert _run(api, home, *args, crash="purge.erase:1", now="2026-03-05") == -9
    kills += 1
    check_consistent(path)
    assert db_rows(home, "SELECT count(*) FROM turns")[0][0] == turns_before  # nothing erased
    assert db_rows(home, "SELECT count(*) FROM purges")[0][0] == 0
    assert _run(api, home, *args, crash="purge.vacuum:1", now="2026-03-05") == -9
    kills += 1
    check_consistent(path)
    assert db_rows(home, "SELECT count(*) FROM turns WHERE session_id = 1")[0][0] == 0
    assert db_rows(home, "SELECT count(*) FROM purges")[0][0] == 1  # erased with its tombstone

    # import into an empty store: killed after 1, 5 and 20 records — nothing half imported
    other = tmp_path / "other-home"
    for n in (1, 5, 20):
        code = _run(
            api, other, "import", str(exported), crash=f"import.record:{n}", now="2026-03-05"
        )
        assert code == -9
        kills += 1
        check_consistent(other / "rheo.db")
        assert db_rows(other, "SELECT count(*) FROM turns")[0][0] == 0
        assert db_rows(other, "SELECT count(*) FROM memory_items")[0][0] == 0
    _run(api, other, "import", str(exported), now="2026-03-05")
    check_consistent(other / "rheo.db")
    assert db_rows(other, "SELECT count(*) FROM turns")[0][0] == turns_before

    # backup: killed after the pages were copied; the store is untouched, a new backup works
    before = db_rows(home, "SELECT count(*) FROM turns")[0][0]
    code = _run(
        api, home, "backup", str(tmp_path / "b1.db"), crash="backup.copy:1", now="2026-03-05"
    )
    assert code == -9
    kills += 1
    check_consistent(path)
    assert db_rows(home, "SELECT count(*) FROM turns")[0][0] == before
    assert not (tmp_path / "b1.db").exists()  # never half-written: only a hidden .partial
    _run(api, home, "backup", str(tmp_path / "b1.db"), now="2026-03-05")
    check_consistent(tmp_path / "b1.db")
    assert kills == 6
