"""Per-profile counters kept by triggers (SQLite migration 12, PostgreSQL m005): stable session
numbers, given when a session opens and never recomputed; the memory generation, bumped by
every change to a memory item in the writer's transaction and never going back. Existing
stores are numbered on upgrade as the person last saw them."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest
from conftest import as_tenant, pg_schema_url

from rheo_cli.memory import purge as engine
from rheo_cli.memory.facts import hotcache
from rheo_cli.memory.facts.curation import forget
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.ledger import sessions, turns
from rheo_cli.memory.store import db
from rheo_cli.memory.store.postgres import schema as pg_schema
from rheo_cli.memory.store.settings import Settings
from rheo_cli.memory.store.sqlite.migrations import migrate

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
TS = "2026-03-01T09:00:00.000Z"


def test_generation_moves_with_every_memory_change_and_never_back(conn):
    seen = [hotcache.generation(conn, "default")]
    assert seen == ["none"]
    remember(conn, Fact(category="fact", topic="pet", label="The cat is Miso"),
             source="manual", now=T0, settings=Settings(), profile="default")  # fmt: skip
    seen.append(hotcache.generation(conn, "default"))
    forget(conn, "default", 1, now=T0)
    seen.append(hotcache.generation(conn, "default"))
    engine.purge(conn, engine.plan(conn, profile="default", what="profile", ref_id=None), now=T0)
    seen.append(hotcache.generation(conn, "default"))
    assert len(set(seen)) == len(seen)  # every change gives a new generation
    epochs = {g.split(":")[0] for g in seen[1:]}
    counters = [int(g.split(":")[1]) for g in seen[1:]]
    assert len(epochs) == 1 and counters == sorted(counters)  # the purge kept the row
    as_tenant(conn, "work")
    assert hotcache.generation(conn, "work") == "none"  # per tenant


def test_numbers_are_per_profile_and_survive_a_purge(conn):
    def add(profile: str, minutes: int) -> int:
        as_tenant(conn, profile)
        when = T0.replace(hour=9 + minutes // 60, minute=minutes % 60)
        return turns.append_turn(conn, profile=profile, role="user", content="hi", now=when,
                                 gap_s=60, new_session=True).turn.session_id  # fmt: skip

    work = add("work", 0)
    first, second, third = (add("default", m) for m in (1, 2, 3))
    assert sessions.get_session(conn, "default", first).number == 1
    assert sessions.get_session(as_tenant(conn, "work"), "work", work).number == 1
    as_tenant(conn, "default")
    engine.purge(conn, engine.plan(conn, profile="default", what="session", ref_id=third),
                 now=T0)  # fmt: skip
    fourth = add("default", 4)
    assert [s.number for s in sessions.list_sessions(conn, "default")] == [4, 2, 1]
    assert sessions.session_by_number(conn, "default", 4).id == fourth
    with pytest.raises(Exception, match="no session s3"):
        sessions.session_by_number(conn, "default", 3)
    assert sessions.get_session(conn, "default", second).number == 2


def test_sqlite_store_from_version_11_is_numbered_on_upgrade(tmp_path):
    path = tmp_path / "old.db"
    import sqlite3

    raw = sqlite3.connect(path, isolation_level=None)
    migrate(raw, target=11)
    for profile in ("work", "default", "work", "default", "default"):
        raw.execute("INSERT INTO sessions(profile, started_at, last_turn_at, turns) "
                    "VALUES (?, ?, ?, 0)", (profile, TS, TS))  # fmt: skip
    raw.execute("DELETE FROM sessions WHERE id = 2")  # a session purged before the upgrade
    raw.close()
    conn = db.open_store(path)
    rows = conn.execute("SELECT profile, number FROM sessions ORDER BY id").fetchall()
    assert [tuple(r) for r in rows] == [("work", 1), ("work", 2), ("default", 1), ("default", 2)]
    new = turns.append_turn(conn, profile="default", role="user", content="hi", now=T0,
                            gap_s=60, new_session=True).turn.session_id  # fmt: skip
    assert sessions.get_session(conn, "default", new).number == 3
    conn.close()


@pytest.mark.skipif(
    not os.environ.get("RHEO_TEST_DATABASE_URL"),
    reason="PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)",
)
def test_postgres_store_from_m004_is_numbered_on_upgrade():
    import psycopg

    with pg_schema_url() as url:
        with psycopg.connect(url, autocommit=True) as a:
            a.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, "
                      "name TEXT NOT NULL, applied_at TEXT NOT NULL)")  # fmt: skip
            for n, (name, script) in enumerate(pg_schema.MIGRATIONS[:4], start=1):
                a.execute(script.encode())
                a.execute("INSERT INTO schema_migrations VALUES (%s, %s, 'then')", (n, name))
            for profile in ("work", "acme", "work", "acme", "acme"):  # the owner: held by FORCE
                a.execute("SELECT set_config('rheo.tenant', %s, false)", (profile,))
                a.execute("INSERT INTO sessions(profile, started_at, last_turn_at, turns) "
                          "VALUES (%s, %s, %s, 0)", (profile, TS, TS))  # fmt: skip
        conn = db.open_url(url, tenant="acme")
        assert pg_schema.schema_version(conn) == pg_schema.SCHEMA_VERSION
        assert [s.number for s in sessions.list_sessions(conn, "acme")] == [3, 2, 1]
        new = turns.append_turn(conn, profile="acme", role="user", content="hi", now=T0,
                                gap_s=60, new_session=True).turn.session_id  # fmt: skip
        assert sessions.get_session(conn, "acme", new).number == 4
        conn.set_tenant("work")
        assert [s.number for s in sessions.list_sessions(conn, "work")] == [2, 1]
        conn.close()
