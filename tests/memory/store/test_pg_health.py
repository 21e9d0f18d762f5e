"""`rheo doctor`'s PostgreSQL checks and repairs (`memory/store/pg_health.py`) against a real
server: each promise of the schema broken by hand — a guard disabled, dropped or defanged,
row-level security off, unforced, its policy dropped, widened or joined by another, a search
index dropped, tsvectors left stale by a changed dictionary, a job whose runner died — is
found, and repaired where that is safe. Skipped without RHEO_TEST_DATABASE_URL."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from conftest import as_admin, pg_schema_url

from rheo_cli.memory import jobs
from rheo_cli.memory.kb import documents
from rheo_cli.memory.ledger import turns
from rheo_cli.memory.ledger.digests import store_digest
from rheo_cli.memory.store import db
from rheo_cli.memory.store.errors import Integrity
from rheo_cli.memory.store.postgres import health as pg_health

pytestmark = pytest.mark.skipif(
    not os.environ.get("RHEO_TEST_DATABASE_URL"),
    reason="PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)",
)

T0 = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def store() -> Iterator[tuple[Any, Any]]:
    """A store with a few turns and a document, and a superuser connection to its schema
    (to break things with)."""
    import psycopg

    with pg_schema_url() as url:
        conn = db.open_url(url, tenant="acme")
        for text in ["the cats are running", "dogs were barking", "我们的价格计划"]:
            turns.append_turn(conn, profile="acme", role="user", content=text, now=T0,
                              gap_s=7200)  # fmt: skip
        documents.add_document(conn, "acme", "/a.md", "# Cats\n\nCats are running.", T0)
        session = conn.execute("SELECT min(id) FROM sessions").fetchone()[0]
        store_digest(conn, profile="acme", session_id=session, narrative="Talked about cats.",
                     facts=[], procedures=[], decisions=[], source_turn_ids=[], model="m",
                     created_at="2026-07-01T10:00:00.000Z")  # fmt: skip
        admin = psycopg.connect(as_admin(url), autocommit=True)
        try:
            yield conn, admin
        finally:
            admin.close()
            conn.close()


def all_problems(conn: Any) -> list[str]:
    return [
        *pg_health.schema_problems(conn),
        *pg_health.missing_tables(conn),
        *pg_health.guard_problems(conn),
        *pg_health.rls_problems(conn),
        *pg_health.extension_problems(conn),
        *pg_health.index_problems(conn),
        *[f"{t} stale" for t in pg_health.stale_tsvectors(conn, "acme")],
    ]


def test_a_sound_store_has_no_problems(store):
    conn, _ = store
    assert all_problems(conn) == []
    assert "PostgreSQL 1" in pg_health.server(conn) and "schema t_" in pg_health.server(conn)


def test_guards_disabled_dropped_or_defanged_are_found_and_restored(store):
    conn, admin = store
    admin.execute("ALTER TABLE turns DISABLE TRIGGER turns_no_delete")
    admin.execute("DROP TRIGGER digests_no_update ON digests")
    admin.execute("ALTER TABLE purges ENABLE REPLICA TRIGGER purges_no_delete")  # not fired
    admin.execute(
        "CREATE OR REPLACE FUNCTION rheo_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "BEGIN RETURN NEW; END $$"
    )
    problems = pg_health.guard_problems(conn)
    assert sorted(problems) == [
        "digests_no_update is missing",
        "function rheo_refuse no longer refuses",
        "purges_no_delete is disabled",
        "turns_no_delete is disabled",
    ]
    done = pg_health.repair_guards(conn)
    assert "digests_no_update recreated" in done and "turns_no_delete enabled" in done
    assert pg_health.guard_problems(conn) == []
    for sql in ("DELETE FROM turns", "UPDATE digests SET narrative = 'x'",
                "UPDATE turns SET content = 'x'"):  # fmt: skip
        with pytest.raises(Integrity, match="append-only"):
            conn.execute(sql)
    role, login = conn.execute("SELECT current_user, session_user").fetchone()
    assert role in ("rheo_tenant", login)  # the owner's rights were given back


def test_row_level_security_weakened_is_found_and_restored(store):
    conn, admin = store
    admin.execute("ALTER TABLE turns DISABLE ROW LEVEL SECURITY")
    admin.execute("ALTER TABLE digests NO FORCE ROW LEVEL SECURITY")
    admin.execute("DROP POLICY jobs_tenant ON jobs")
    admin.execute("ALTER POLICY sessions_tenant ON sessions USING (true)")
    admin.execute("CREATE POLICY peek ON kb_chunks USING (true)")
    problems = pg_health.rls_problems(conn)
    assert sorted(problems) == [
        "digests: row-level security is not forced",
        "jobs: policy jobs_tenant is missing",
        "kb_chunks: other policies widen it: peek",
        "sessions: policy sessions_tenant is not rheo's",
        "turns: row-level security is off",
    ]
    pg_health.repair_rls(conn)
    # The policy a person added is theirs to judge: reported, not dropped.
    assert pg_health.rls_problems(conn) == ["kb_chunks: other policies widen it: peek"]
    admin.execute("DROP POLICY peek ON kb_chunks")
    assert pg_health.rls_problems(conn) == []
    conn.set_tenant("globex")
    assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 0  # isolation is back
    assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0


def test_a_dropped_index_a_disabled_trigger_and_stale_tsvectors_are_rebuilt_from_the_text(store):
    conn, admin = store
    admin.execute("ALTER TABLE postings DROP CONSTRAINT postings_pkey")
    admin.execute("ALTER TABLE turns DISABLE TRIGGER turns_postings_added")
    turns.append_turn(conn, profile="acme", role="user", content="hamsters were sleeping",
                      now=T0, gap_s=7200)  # fmt: skip
    assert turns.search_turns(conn, "acme", "hamsters") == []  # no postings were written
    assert pg_health.stale_postings(conn, "acme") == {"turns": 2}
    # The dictionary changes (as a server upgrade's new stemmer would): the stored tsvectors
    # no longer match what their text gives, and "cat" stops finding "cats".
    admin.execute("ALTER TEXT SEARCH CONFIGURATION rheo_english ALTER MAPPING FOR asciiword "
                  "WITH simple")  # fmt: skip
    assert pg_health.index_problems(conn) == [
        "postings_pkey is missing",
        "trigger turns_postings_added is disabled",
    ]
    stale = pg_health.stale_tsvectors(conn, "acme")
    assert stale == {"turns": 3, "digests": 1, "kb_chunks": 1}
    done = pg_health.repair_search(conn, "acme")
    assert "postings_pkey built" in done and "the postings triggers recreated" in done
    assert any(d.startswith("turns.fts and its postings") for d in done)
    assert pg_health.index_problems(conn) == [] and pg_health.stale_tsvectors(conn, "acme") == {}
    assert pg_health.stale_postings(conn, "acme") == {}
    assert [t.content for t, _ in turns.search_turns(conn, "acme", "cats")] == [
        "the cats are running"
    ]
    assert [t.content for t, _ in turns.search_turns(conn, "acme", "hamsters")] == [
        "hamsters were sleeping"
    ]
    found = turns.search_turns(conn, "acme", "价格计划")
    assert [t.content for t, _ in found] == ["我们的价格计划"]
    assert turns.count_turns(conn, "acme") == 4  # the ledger itself untouched
    turns.append_turn(conn, profile="acme", role="user", content="gerbils", now=T0, gap_s=7200)
    assert pg_health.stale_postings(conn, "acme") == {}  # the trigger writes again


def test_postings_deleted_by_hand_are_found_and_computed_again(store):
    conn, admin = store
    admin.execute("DELETE FROM postings WHERE profile = 'acme' AND kind IN ('d', 'c')")
    assert pg_health.stale_postings(conn, "acme") == {"turns": 5, "digests": 2}
    assert pg_health.stale_postings(conn, "globex") == {}
    admin.execute("CREATE OR REPLACE FUNCTION rheo_postings_added() RETURNS trigger "
                  "LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$")  # fmt: skip
    assert pg_health.index_problems(conn) == ["function rheo_postings_added is not rheo's"]
    assert pg_health.repair_search(conn, "acme") == [
        "the postings triggers recreated",
        "the postings of turns computed again for profile acme",
        "the postings of digests computed again for profile acme",
    ]
    assert pg_health.stale_postings(conn, "acme") == {}


def test_a_job_whose_runner_died_is_found_and_put_back(store):
    """The engine's check of jobs past their lease (`jobs.stuck`), on this store."""
    conn, _ = store
    first = conn.execute("SELECT min(id) FROM turns").fetchone()[0]
    jobs.enqueue(conn, profile="acme", kind="extract", ref_id=first, ts="2026-07-01T09:00:00.000Z")
    claimed = jobs.claim(conn, worker="dead", wall_now=1000.0, ts="2026-07-01T09:00:00.000Z")
    assert claimed is not None
    assert jobs.stuck(conn, "acme", 1000.0 + 10) == []  # its lease still runs
    later = 1000.0 + jobs.LEASE_S + 1
    assert jobs.stuck(conn, "acme", later) == [claimed.id]
    assert jobs.stuck(conn, "globex", later) == []
    assert jobs.release_stuck(conn, "acme", later, "2026-07-01T10:00:00.000Z") == 1
    job = jobs.get_job(conn, claimed.id)
    assert job.status == "pending" and job.attempts == 0 and job.leased_by is None


def test_the_search_speed_line_says_whether_the_full_text_match_is_leakproof(store):
    """PostgreSQL ships ``ts_match_vq`` not LEAKPROOF (searches then read every row of the
    tenant); the check follows the superuser's ALTER FUNCTION either way (rolled back here, as
    the ALTER is transactional, so the server and other tests' plans are left as they were)."""
    import psycopg

    conn, admin = store
    before = pg_health.match_is_leakproof(conn)
    with psycopg.connect(admin.info.dsn) as su:  # not autocommit: one transaction
        su.execute(pg_health.LEAKPROOF_MATCH)
        assert pg_health.match_is_leakproof(su) is True
        su.execute(pg_health.LEAKPROOF_MATCH.replace("LEAKPROOF", "NOT LEAKPROOF"))
        assert pg_health.match_is_leakproof(su) is False
        su.rollback()
    assert pg_health.match_is_leakproof(conn) is before
