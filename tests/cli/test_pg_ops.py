"""``rheo purge``, ``rheo backup``, ``rheo export``/``import`` and ``rheo doctor`` on PostgreSQL,
end to end against a real server (``scripts/test-services start``): the same promises as on
SQLite. Skipped without RHEO_TEST_DATABASE_URL."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import admin_url, as_admin, pg_schema_url
from fakeprovider import facts
from helpers import route, run_rheo

from rheo_cli.memory.store.postgres import schema as pg_schema

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("RHEO_TEST_DATABASE_URL"),
        reason="PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)",
    ),
    pytest.mark.xdist_group("pg_purge"),  # purges: see tests/memory/store/test_pg_purge.py
]

WORD = "Xylophonequartz"


@pytest.fixture
def url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """rheo pointed at a fresh schema of the test server."""
    from rheo_cli.memory.store.postgres import purge as pg_purge

    monkeypatch.setattr(pg_purge, "SNAPSHOT_WAIT_S", 60)  # other workers share the horizon
    with pg_schema_url() as u:
        monkeypatch.setenv("RHEO_DATABASE_URL", u)
        yield u


def admin_rows(url: str, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
    """Rows read by a superuser connection (row-level security does not bind it)."""
    import psycopg

    with psycopg.connect(as_admin(url), autocommit=True) as a:
        return a.execute(sql, args).fetchall()


def seed(rheo: Any, fake_model: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """default: a question with WORD and a fact learnt from it, another question; work: a
    question with WORD too."""
    route(
        fake_model,
        chat="Noted.",
        extract=facts(
            {"category": "fact", "topic": "plan", "label": f"Plans {WORD}", "confidence": 0.9}
        ),
    )
    monkeypatch.setenv("RHEO_NOW", "2026-04-01T09:00:00+00:00")
    assert rheo("ask", f"my {WORD} plan").exit_code == 0
    assert rheo("ask", "something else").exit_code == 0
    assert rheo("-p", "work", "ask", f"work's {WORD} notes").exit_code == 0
    result = rheo("maintain")
    assert result.exit_code == 0, result.stderr


def test_purge_on_postgres_erases_the_turn_and_what_was_learnt_from_it(rheo, fake_model, url,
                                                                       monkeypatch):  # fmt: skip
    seed(rheo, fake_model, monkeypatch)
    assert admin_rows(url, "SELECT count(*) FROM memory_items WHERE profile = 'default'") == [(1,)]
    work_before = admin_rows(url, "SELECT id, content FROM turns WHERE profile = 'work'")
    first = admin_rows(url, "SELECT min(id) FROM turns WHERE profile = 'default'")[0][0]
    refused = rheo("purge", "turn", str(first))  # no terminal, no --yes
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    result = rheo("purge", "turn", str(first), "--yes", "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["counts"]["turns"] == 1 and out["counts"]["memory_items"] == 1
    assert out["vacuumed"] is True
    assert rheo("history", "search", WORD).stdout.strip() == "(no turns)"
    assert rheo("memory", "list", "--all", "--json").stdout.strip() == "[]"
    assert admin_rows(url, "SELECT what, ref_id, profile FROM purges") == [
        ("turn", first, "default")
    ]
    # The other tenant is untouched and still finds its own.
    assert admin_rows(url, "SELECT id, content FROM turns WHERE profile = 'work'") == work_before
    assert WORD in rheo("-p", "work", "history", "search", WORD).stdout
    assert rheo("purge", "turn", str(first), "--yes").exit_code == 2  # gone: not found
    # Another tenant's turn is not found from this profile.
    work_turn = str(work_before[0][0])
    assert rheo("purge", "turn", work_turn, "--yes").exit_code == 2
    assert admin_rows(url, "SELECT count(*) FROM turns WHERE profile = 'work'") == [(2,)]


@pytest.mark.boundary
def test_a_purge_killed_mid_way_on_postgres_erases_nothing(
    rheo, fake_model, url, monkeypatch, home
):
    seed(rheo, fake_model, monkeypatch)
    before = admin_rows(url, "SELECT count(*) FROM turns")
    env = {**os.environ, "RHEO_HOME": str(home), "RHEO_CRASH_AT": "purge.erase:1"}
    session = str(
        admin_rows(url, "SELECT min(number) FROM sessions WHERE profile = 'default'")[0][0]
    )
    assert run_rheo("purge", "session", session, "--yes", env=env).returncode == -9
    assert admin_rows(url, "SELECT count(*) FROM turns") == before
    assert admin_rows(url, "SELECT count(*) FROM purges") == [(0,)]
    # Killed after the commit, before the tables were rewritten: erased, with its tombstone.
    env["RHEO_CRASH_AT"] = "purge.vacuum:1"
    assert run_rheo("purge", "session", session, "--yes", env=env).returncode == -9
    assert admin_rows(url, "SELECT count(*) FROM turns WHERE profile = 'default'") == [(0,)]
    assert admin_rows(url, "SELECT what FROM purges") == [("session",)]
    assert admin_rows(url, "SELECT count(*) FROM turns WHERE profile = 'work'") == [(2,)]


@pytest.mark.boundary
def test_backup_on_postgres_is_the_tenant_in_export_format_and_restores(
    rheo, fake_model, url, monkeypatch, tmp_path, home
):
    seed(rheo, fake_model, monkeypatch)
    doc = tmp_path / "pricing.md"
    doc.write_text("# Pricing\n\nRefunds within 30 days.\n")
    assert rheo("kb", "add", str(doc)).exit_code == 0
    dest = tmp_path / "backups" / "rheo-default.jsonl"
    dest.parent.mkdir()
    result = rheo("backup", str(dest), "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["profile"] == "default"
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    saved = dest.read_text()
    assert saved == rheo("export").stdout  # the tenant, knowledge base included
    records = [json.loads(line) for line in saved.splitlines()]
    assert {r["profile"] for r in records[1:]} == {"default"}  # never another tenant's
    assert {"turn", "memory_item", "kb_document", "kb_chunk"} <= {r["type"] for r in records}
    again = rheo("backup", str(dest))
    assert again.exit_code == 2 and "already exists" in again.stderr  # usage, as a bad folder

    # Restored into an empty PostgreSQL schema: the same export, byte for byte.
    with pg_schema_url() as other:
        monkeypatch.setenv("RHEO_DATABASE_URL", other)
        restored = rheo("import", str(dest), "--json")
        assert restored.exit_code == 0, restored.stderr
        assert rheo("export").stdout == saved
        assert "30 days" in rheo("kb", "search", "refunds").stdout
    # ... and into SQLite.
    monkeypatch.delenv("RHEO_DATABASE_URL")
    monkeypatch.setenv("RHEO_HOME", str(tmp_path / "sqlite-home"))
    assert rheo("import", str(dest)).exit_code == 0
    assert rheo("export").stdout == saved

    # Killed mid-way: no file under the name.
    monkeypatch.setenv("RHEO_DATABASE_URL", url)
    env = {**os.environ, "RHEO_HOME": str(home), "RHEO_CRASH_AT": "backup.copy:1"}
    second = tmp_path / "backups" / "second.jsonl"
    assert run_rheo("backup", str(second), env=env).returncode == -9
    assert not second.exists()


def test_export_all_on_postgres_is_refused_and_a_file_of_profiles_fills_each_tenant(
    rheo, fake_model, url, monkeypatch, tmp_path
):
    refused = rheo("export", "--all")
    assert refused.exit_code == 2 and "one profile at a time" in refused.stderr
    # Two profiles exported from SQLite, imported into PostgreSQL: each into its tenant.
    monkeypatch.delenv("RHEO_DATABASE_URL")
    seed(rheo, fake_model, monkeypatch)
    everything = tmp_path / "all.jsonl"
    assert rheo("export", "--all", "-o", str(everything)).exit_code == 0
    monkeypatch.setenv("RHEO_DATABASE_URL", url)
    result = rheo("import", str(everything), "--json")
    assert result.exit_code == 0, result.stderr
    work = json.loads(rheo("-p", "work", "history", "recent", "--json").stdout)
    assert [t["content"] for t in work if t["role"] == "user"] == [f"work's {WORD} notes"]
    mine = json.loads(rheo("history", "recent", "--json").stdout)
    assert len(mine) == 4 and all("work's" not in t["content"] for t in mine)
    assert admin_rows(url, "SELECT DISTINCT profile FROM turns ORDER BY 1") == [
        ("default",),
        ("work",),
    ]


def test_doctor_on_postgres_checks_one_line_each_and_repairs(rheo, fake_model, url, monkeypatch):
    seed(rheo, fake_model, monkeypatch)
    with_password = re.sub(r"://([^:@/]+)@", r"://\1:sekrit@", url, count=1)
    assert with_password != url
    monkeypatch.setenv("RHEO_DATABASE_URL", with_password)
    healthy = rheo("doctor")
    assert healthy.exit_code == 0, healthy.stdout + healthy.stderr
    lines = healthy.stdout.splitlines()
    names = [line.split(":", 1)[0].split(None, 1)[1] for line in lines]
    assert names == ["config", "api key", "permissions", "database", "schema", "tables",
                     "append-only guards", "row-level security", "extensions",
                     "search indexes", "search speed", "sessions", "jobs",
                     "resident"]  # fmt: skip
    assert all(line.startswith("ok ") for line in lines)
    assert "sekrit" not in healthy.stdout + healthy.stderr
    assert "PostgreSQL" in lines[3] and f"version {pg_schema.SCHEMA_VERSION}" in lines[4]

    # Break four promises: a guard off, a policy gone, a job whose runner died, a session's
    # counters.
    import psycopg

    with psycopg.connect(as_admin(url), autocommit=True) as a:
        a.execute("ALTER TABLE turns DISABLE TRIGGER turns_no_delete")
        a.execute("DROP POLICY memory_items_tenant ON memory_items")
        a.execute("UPDATE jobs SET status = 'running', lease_until = 1, leased_by = 'gone' "
                  "WHERE id = (SELECT min(id) FROM jobs)")  # fmt: skip
        a.execute("UPDATE sessions SET turns = 99 WHERE profile = 'default'")
    broken = rheo("doctor", "--json")
    assert broken.exit_code == 1
    report = json.loads(broken.stdout)
    bad = {c["name"]: c["detail"] for c in report["checks"] if not c["ok"]}
    assert bad == {
        "append-only guards": "turns_no_delete is disabled",
        "row-level security": "memory_items: policy memory_items_tenant is missing",
        "sessions": "1 session whose turn count or times disagree with their turns "
        "('rheo doctor --repair' recounts them)",
        "jobs": bad["jobs"],
        # With its policy gone, forced row-level security shows the owner none of
        # memory_items: their postings look out of step until the policy is back.
        "search indexes": "memory_items: postings out of step (2)",
    }
    assert "1 running past their lease" in bad["jobs"]
    text_out = rheo("doctor")
    assert text_out.exit_code == 1 and text_out.stderr.startswith("rheo: 5 problems")
    fixed = rheo("doctor", "--repair", "--json")
    assert fixed.exit_code == 0, fixed.stdout
    repaired = json.loads(fixed.stdout)["repaired"]
    assert "turns_no_delete enabled" in repaired
    assert "row-level security of memory_items restored" in repaired
    assert any("put back in the queue" in line for line in repaired)
    assert "recounted the turns and times of 1 session" in repaired
    assert admin_rows(url, "SELECT turns FROM sessions WHERE profile = 'default'") == [(4,)]
    assert rheo("doctor").exit_code == 0
    # What the repairs restored holds again.
    with psycopg.connect(url, autocommit=True) as a:  # the owner, held by FORCE
        a.execute("SELECT set_config('rheo.tenant', 'work', false)")
        assert a.execute("SELECT count(*) FROM memory_items").fetchone()[0] == 0
        with pytest.raises(psycopg.Error, match="append-only"):
            a.execute("DELETE FROM turns")


def test_doctor_reports_a_store_rheo_cannot_create_as_a_problem(rheo, monkeypatch):
    import uuid

    import psycopg

    base = admin_url()  # the superuser makes the role
    tag = uuid.uuid4().hex[:10]
    role, schema = f"limited_{tag}", f"closed_{tag}"
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN")
        admin.execute(f"CREATE SCHEMA {schema}")
        admin.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")  # no CREATE
    user_url = base.replace("://rheo@", f"://{role}@", 1)
    sep = "&" if "?" in user_url else "?"
    monkeypatch.setenv("RHEO_DATABASE_URL", f"{user_url}{sep}options=-csearch_path%3D{schema}")
    try:
        result = rheo("doctor")
        assert result.exit_code == 1
        line = [x for x in result.stdout.splitlines() if " schema:" in x]
        assert line and line[0].startswith("PROBLEM"), result.stdout
        assert "cannot create its tables" in line[0] and "permission denied" in line[0]
        assert rheo("history", "recent").exit_code == 1  # what doctor foretold
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
            admin.execute(f"DROP ROLE {role}")


def test_doctor_and_commands_work_in_a_schema_of_their_own(rheo, monkeypatch):
    import uuid

    import psycopg

    base = os.environ["RHEO_TEST_DATABASE_URL"]
    schema = "own_" + uuid.uuid4().hex[:12]
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in base else "?"
    monkeypatch.setenv("RHEO_DATABASE_URL", f"{base}{sep}options=-csearch_path%3D{schema}")
    try:
        first = rheo("doctor")
        assert "ok        schema: no rheo tables yet" in first.stdout, first.stdout
        done = rheo("history", "recent")
        assert done.exit_code == 0, done.stderr
        after = rheo("doctor")
        assert "PROBLEM" not in after.stdout.replace("PROBLEM   api key", ""), after.stdout
        assert "search indexes: index valid" in after.stdout
    finally:
        with psycopg.connect(base, autocommit=True) as admin:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")
