"""Upgrades: a database with data at every earlier schema version opens in this rheo with all its
data, consistent indexes and working memory; one from a newer rheo is refused and left byte for
byte as it was."""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import UTC, datetime

import pytest
from helpers import run_rheo

from rheo_cli.memory import jobs
from rheo_cli.memory.context import assemble as context
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store import db
from rheo_cli.memory.store.errors import DatabaseError, StoreError
from rheo_cli.memory.store.settings import Settings
from rheo_cli.memory.store.sqlite import health
from rheo_cli.memory.store.sqlite.migrations import SCHEMA_VERSION, migrate, schema_version

TS = "2026-03-01T09:00:00.000Z"


def _fill(conn: sqlite3.Connection, version: int) -> None:
    """Rows of every table that exists at ``version``, written with that version's columns."""
    conn.execute(
        "INSERT INTO sessions(profile, started_at, last_turn_at, turns) "
        "VALUES ('default', ?, ?, 3)",
        (TS, TS),
    )
    for role, content, status in (
        ("user", "I moved to Lisbon with my bicycle", None),
        ("assistant", "Lisbon is hilly for a bicycle!", "ok"),
        ("user", "我喜欢骑自行车去上班", None),
    ):
        conn.execute(
            "INSERT INTO turns(profile, session_id, role, content, ts, status) "
            "VALUES ('default', 1, ?, ?, ?, ?)",
            (role, content, TS, status),
        )
    if version >= 2:
        conn.execute(
            "INSERT INTO memory_items(profile, category, topic, label, content_key, confidence, "
            "source, source_turn_id, created_at, reinforced_at) VALUES ('default', 'fact', "
            "'city', 'Lives in Lisbon', 'city|lives in lisbon', 0.9, 'extractor', 1, ?, ?)",
            (TS, TS),
        )
        conn.execute(
            "INSERT INTO memory_events(item_id, profile, ts, kind, cause) "
            "VALUES (1, 'default', ?, 'created', 'extractor')",
            (TS,),
        )
        conn.execute(
            "INSERT INTO digests(profile, session_id, started_at, ended_at, narrative, "
            "created_at) VALUES ('default', 1, ?, ?, 'They talked about cycling in Lisbon.', ?)",
            (TS, TS, TS),
        )
        conn.execute(
            "INSERT INTO jobs(profile, kind, ref_id, status, attempts, created_at, updated_at) "
            "VALUES ('default', 'extract', 2, 'pending', 1, ?, ?)",
            (TS, TS),
        )


def _hash(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("version", range(1, SCHEMA_VERSION))
def test_upgrade_from_every_earlier_version_keeps_the_data(tmp_path, version):
    path = tmp_path / "old.db"
    conn = db.open_store(path, migrate_schema=False)
    migrate(conn, target=version)
    _fill(conn, version)
    conn.close()

    conn = db.open_store(path)  # this rheo
    assert schema_version(conn) == SCHEMA_VERSION
    applied = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY 1")]
    assert applied == list(range(1, SCHEMA_VERSION + 1))
    assert health.integrity_problems(conn) == [] and health.missing_tables(conn) == []
    assert health.fts_problems(conn) == {}
    contents = [r[0] for r in conn.execute("SELECT content FROM turns ORDER BY id")]
    assert contents[0] == "I moved to Lisbon with my bicycle" and len(contents) == 3
    # the indexes find old rows, including the trigram index added in version 4
    assert (
        conn.execute("SELECT count(*) FROM turns_fts WHERE turns_fts MATCH 'bicycle'").fetchone()[0]
        == 2
    )
    cjk = conn.execute("SELECT rowid FROM turns_cjk WHERE turns_cjk MATCH '自行车'").fetchall()
    assert [r[0] for r in cjk] == [3]
    # old data keeps its rules and new turns still append
    with pytest.raises(DatabaseError, match="append-only"):
        conn.execute("UPDATE turns SET content = 'x' WHERE id = 1")
    now = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)
    added = ledger.append_turn(
        conn, profile="default", role="user", content="Any tips for Lisbon?", now=now, gap_s=7200
    )
    assert added.turn.session_id == 1
    ctx = context.assemble(
        conn, profile="default", message="Lisbon bicycle", now=now, settings=Settings()
    )
    text = ctx.text()
    assert "Lisbon is hilly" in text
    if version >= 2:
        assert "Lives in Lisbon" in text and "cycling in Lisbon" in text
        job = conn.execute("SELECT status, attempts, leased_by, notes FROM jobs").fetchone()
        assert tuple(job) == ("pending", 1, None, "[]")
        # the old facts have no validity window, the queue takes the memory review's jobs
        window = conn.execute("SELECT valid_from, valid_until FROM memory_items").fetchall()
        assert [tuple(w) for w in window] == [(None, None)]
        assert jobs.enqueue(conn, profile="default", kind="consolidate", ref_id=1, ts=TS)
        kinds = [r[0] for r in conn.execute("SELECT kind FROM jobs ORDER BY id")]
        assert kinds == ["extract", "consolidate"]
    conn.close()


@pytest.mark.boundary
@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_a_database_from_a_newer_rheo_is_refused_and_left_untouched(tmp_path, home, journal):
    home.mkdir(parents=True, exist_ok=True)
    path = home / "rheo.db"
    conn = db.open_store(path)
    _fill(conn, SCHEMA_VERSION)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.execute(f"PRAGMA journal_mode = {journal}")
    conn.close()
    before = _hash(path)
    with pytest.raises(StoreError, match="newer than this rheo"):
        db.open_store(path)
    for args in (["history", "recent"], ["ask", "hello"], ["maintain"]):
        proc = run_rheo(
            *args,
            env={
                "RHEO_HOME": str(home),
                "ANTHROPIC_API_KEY": "k",
                "RHEO_WORKER": "off",
                "PATH": "/usr/bin:/bin",
            },
        )
        assert proc.returncode == 1, proc.stderr
        err = proc.stderr.decode()
        assert len(err.strip().splitlines()) == 1 and "newer than this rheo" in err, err
        assert "upgrade rheo" in err
    assert _hash(path) == before
    assert not (home / "rheo.db-wal").exists() or (home / "rheo.db-wal").stat().st_size == 0
