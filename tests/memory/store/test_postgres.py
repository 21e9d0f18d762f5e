"""The PostgreSQL store against a real server (``scripts/test-services start``): tenant
isolation enforced by the database itself, the append-only ledger, migrations, and rheo's
commands end to end with RHEO_DATABASE_URL. Skipped without RHEO_TEST_DATABASE_URL."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import pytest
from conftest import admin_url, pg_schema_url
from helpers import request_text

from rheo_cli.memory import jobs
from rheo_cli.memory.facts import items, remember
from rheo_cli.memory.facts.parsing import Fact
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store import db
from rheo_cli.memory.store.errors import Integrity, StoreError
from rheo_cli.memory.store.postgres import schema as pg_schema
from rheo_cli.memory.store.settings import Settings

pytestmark = pytest.mark.skipif(
    not os.environ.get("RHEO_TEST_DATABASE_URL"),
    reason="PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)",
)

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
S = Settings()


@pytest.fixture
def url():
    with pg_schema_url() as u:
        yield u


def say(conn, profile, content, when=T0):
    return ledger.append_turn(
        conn, profile=profile, role="user", content=content, now=when, gap_s=S.gap_s
    )


def test_an_unfiltered_query_sees_only_its_own_tenant(url):
    acme = db.open_url(url, tenant="acme")
    globex = db.open_url(url, tenant="globex")
    try:
        say(acme, "acme", "acme's secret pricing")
        say(globex, "globex", "globex's secret pricing")
        remember.remember(
            globex,
            Fact("fact", "pricing", "Globex charges 40"),
            source="manual",
            now=T0,
            settings=S,
            profile="globex",
        )
        # Deliberately no WHERE profile = ...: the database filters anyway.
        rows = acme.execute("SELECT * FROM turns").fetchall()
        assert [r["content"] for r in rows] == ["acme's secret pricing"]
        assert acme.execute("SELECT count(*) FROM memory_items").fetchone()[0] == 0
        assert acme.execute("SELECT count(*) FROM sessions").fetchone()[0] == 1
        assert [r["content"] for r in globex.execute("SELECT * FROM turns")] == [
            "globex's secret pricing"
        ]
        # Even an engine call asked for the other profile finds nothing.
        assert ledger.recent_turns(acme, "globex") == []
        assert items.list_items(acme, "globex") == []
    finally:
        acme.close()
        globex.close()


def test_a_row_for_another_tenant_is_refused(url):
    acme = db.open_url(url, tenant="acme")
    try:
        with pytest.raises(Integrity, match="row-level security"):
            say(acme, "globex", "planted in globex's ledger")
        assert acme.execute("SELECT count(*) FROM turns").fetchone()[0] == 0
        say(acme, "acme", "mine")
        # Nor can a row be moved to another tenant (the ledger refuses updates anyway;
        # sessions may be updated, but not out of the tenant).
        with pytest.raises(Integrity, match="row-level security"):
            acme.execute("UPDATE sessions SET profile = 'globex'")
    finally:
        acme.close()


def test_the_ledger_refuses_edits_deletes_and_truncate(url):
    conn = db.open_url(url, tenant="default")
    try:
        say(conn, "default", "kept forever")
        remember.remember(
            conn,
            Fact("fact", "x", "a fact"),
            source="manual",
            now=T0,
            settings=S,
            profile="default",
        )
        for statement in (
            "UPDATE turns SET content = 'changed'",
            "DELETE FROM turns",
            "TRUNCATE turns CASCADE",
            "DELETE FROM memory_events",
        ):
            with pytest.raises(Integrity, match="append-only|never deleted|permission denied"):
                conn.execute(statement)
        assert [t.content for t in ledger.recent_turns(conn, "default")] == ["kept forever"]
    finally:
        conn.close()


def test_migrations_are_versioned_and_run_once(url):
    first = db.open_url(url, tenant="default")
    second = db.open_url(url, tenant="default")
    try:
        names = [r[0] for r in first.execute("SELECT name FROM schema_migrations ORDER BY 1")]
        assert names == [name for name, _ in pg_schema.MIGRATIONS]
        assert pg_schema.migrate(second) == []
    finally:
        first.close()
        second.close()


def test_a_superuser_connection_is_still_held_to_its_tenant():
    with pg_schema_url(admin_url()) as url:
        _superuser_held(url)


def _superuser_held(url: str) -> None:
    conn = db.open_url(url, tenant="acme")
    try:
        # A superuser's connection: the store acts as the tenant role.
        row = conn.execute("SELECT current_user, current_setting('is_superuser')").fetchone()
        assert row[0] == pg_schema.TENANT_ROLE and row[1] == "off"
    finally:
        conn.close()


def test_two_workers_never_claim_the_same_job(url):
    a = db.open_url(url, tenant="default")
    b = db.open_url(url, tenant="default")
    try:
        t = say(a, "default", "hello")
        assert jobs.enqueue(a, profile="default", kind="extract", ref_id=t.turn.id, ts="x")
        assert not jobs.enqueue(b, profile="default", kind="extract", ref_id=t.turn.id, ts="x")
        first = jobs.claim(a, worker="w1", wall_now=1000.0, ts="x")
        second = jobs.claim(b, worker="w2", wall_now=1000.0, ts="x")
        assert first is not None and second is None
    finally:
        a.close()
        b.close()


def test_an_unreachable_server_is_one_clear_error():
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL"):
        db.open_url("postgresql://rheo@127.0.0.1:9/none?connect_timeout=2", tenant="default")


def test_commands_run_on_postgres(rheo, fake_model, url, monkeypatch):
    monkeypatch.setenv("RHEO_DATABASE_URL", url)
    monkeypatch.setenv("RHEO_NOW", "2026-05-01T09:00:00Z")
    fake_model.add("Noted: Miso.", "Your cat is Miso.")
    assert rheo("ask", "My cat is called Miso.").exit_code == 0
    monkeypatch.setenv("RHEO_NOW", "2026-05-01T09:05:00Z")
    result = rheo("ask", "What is my cat called?")
    assert result.exit_code == 0, result.stderr
    assert "user: My cat is called Miso." in request_text(fake_model.last)

    added = rheo("memory", "add", "--topic", "dentist", "The dentist appointment is on Friday")
    assert added.exit_code == 0, added.stderr
    listed = rheo("memory", "list", "--json")
    assert listed.exit_code == 0, listed.stderr
    assert "dentist" in listed.stdout

    found = rheo("history", "search", "cat", "--json")
    assert found.exit_code == 0, found.stderr
    assert any("Miso" in hit["content"] for hit in json.loads(found.stdout))

    ctx = rheo("context", "when is the dentist?")
    assert ctx.exit_code == 0, ctx.stderr
    assert "=== CURRENT MEMORY ===" in ctx.stdout and "dentist" in ctx.stdout

    # Nothing went to the SQLite file, and another profile sees none of it.
    other = rheo("history", "recent", "--json", "--profile", "work")
    assert other.exit_code == 0, other.stderr
    assert json.loads(other.stdout) in ([], {"turns": []})
    conn = db.open_url(url, tenant="default")
    try:
        assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 4
    finally:
        conn.close()


def test_sessions_split_by_gap_on_postgres(url):
    conn = db.open_url(url, tenant="default")
    try:
        a = say(conn, "default", "one")
        b = say(conn, "default", "two", T0 + timedelta(hours=3))
        assert b.opened_session and b.turn.session_id != a.turn.session_id
    finally:
        conn.close()


def test_a_schema_of_its_own_without_the_extensions_schema_on_the_path_works():
    """``options=-csearch_path=myrheo`` with pg_trgm and unaccent in public: the schema is
    created with the extensions' objects named in their schema, and search works."""
    import uuid

    import psycopg

    base = os.environ["RHEO_TEST_DATABASE_URL"]
    schema = "own_" + uuid.uuid4().hex[:12]
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in base else "?"
    try:
        conn = db.open_url(f"{base}{sep}options=-csearch_path%3D{schema}", tenant="default")
        try:
            when = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
            for text_ in ("東京で会議があります", "Café crème in Zürich"):
                ledger.append_turn(
                    conn, profile="default", role="user", content=text_, now=when, gap_s=7200
                )
            assert [t.content for t, _ in ledger.search_turns(conn, "default", "会議")] == [
                "東京で会議があります"
            ]
            assert [t.content for t, _ in ledger.search_turns(conn, "default", "zurich")] == [
                "Café crème in Zürich"
            ]
            tables = conn.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = ? AND tablename = 'turns'",
                (schema,),
            ).fetchone()[0]
            assert tables == 1  # in the schema of its own, not in public
        finally:
            conn.close()
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
