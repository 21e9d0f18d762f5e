"""Each member's own login on PostgreSQL (`store/postgres/roles.py`): two
login roles that are no superusers, each granted one profile by the tables' owner (itself no
superuser), read and write nothing of the other's — turns, sessions, memory items and their
history, digests, jobs, postings, the knowledge base — whether through rheo (the engine and the
CLI) or through psycopg with ``set_config('rheo.tenant', …)``; a profile granted to both is
shared; the owner still acts for every profile (the single login of before); a revoked grant
closes the door. Skipped without RHEO_TEST_DATABASE_URL."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conftest import admin_url, pg_schema_url
from helpers import run_rheo

from rheo_cli.memory import jobs
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.kb import documents
from rheo_cli.memory.kb.search import search_chunks
from rheo_cli.memory.ledger import turns
from rheo_cli.memory.ledger.digests import store_digest
from rheo_cli.memory.store import db
from rheo_cli.memory.store.errors import DatabaseError, InvalidInput, NotFound, StoreError
from rheo_cli.memory.store.postgres import roles as pg_roles
from rheo_cli.memory.store.postgres import search as pgsearch
from rheo_cli.memory.store.settings import Settings

pytestmark = pytest.mark.skipif(
    not os.environ.get("RHEO_TEST_DATABASE_URL"),
    reason="PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)",
)

T0 = datetime(2026, 8, 1, 9, 0, tzinfo=UTC)
SECRET = "zanzibarquill"
"""A word both tenants' rows hold: the canary a search must never bring from the other."""
TABLES = ("sessions", "turns", "memory_items", "memory_events", "digests", "jobs",
          "kb_documents", "kb_chunks", "postings", "profile_counters", "purges")  # fmt: skip


@dataclass
class Team:
    """The test schema's URL for each login: the superuser, the owner, alice and bob."""

    admin: str
    owner: str
    alice: str
    bob: str
    names: dict[str, str]


def _as(url: str, role: str) -> str:
    return url.replace("://rheo@", f"://{role}@", 1)


def fill(conn: Any, profile: str) -> dict[str, int]:
    """One of everything for ``profile``, each holding SECRET; returns the ids."""
    conn.set_tenant(profile)
    out: dict[str, int] = {}
    for i in range(3):
        appended = turns.append_turn(
            conn, profile=profile, role="user", content=f"{profile} {SECRET} plan {i} 秘密計画",
            now=T0 + timedelta(minutes=i), gap_s=7200,
        )  # fmt: skip
        out.setdefault("turn", appended.turn.id)
    out["session"] = appended.turn.session_id
    remember(conn, Fact("fact", "canary", f"{profile} {SECRET} fact"), source="manual", now=T0,
             settings=Settings(), profile=profile)  # fmt: skip
    out["item"] = conn.execute("SELECT max(id) FROM memory_items").fetchone()[0]
    store_digest(conn, profile=profile, session_id=out["session"],
                 narrative=f"{profile} talked about {SECRET}", facts=[], procedures=[],
                 decisions=[], source_turn_ids=[], model="m",
                 created_at="2026-08-01T10:00:00.000Z")  # fmt: skip
    jobs.enqueue(conn, profile=profile, kind="extract", ref_id=out["turn"],
                 ts="2026-08-01T10:00:00.000Z")  # fmt: skip
    documents.add_document(conn, profile, "/notes.md", f"# {SECRET}\n\n{profile} notes", T0)
    return out


@pytest.fixture
def team() -> Iterator[Team]:
    """A schema owned by a plain role (no superuser) holding profiles acme, globex and
    shared; alice is granted acme and shared, bob globex and shared."""
    import psycopg

    suffix = secrets.token_hex(4)
    names = {who: f"rheo_{who}_{suffix}" for who in ("owner", "alice", "bob")}
    with pg_schema_url(admin_url()) as url:  # made by the superuser, who makes the roles
        with psycopg.connect(url, autocommit=True) as a:
            schema = a.execute("SELECT current_schema()").fetchone()[0]
            for name in names.values():
                a.execute(f"CREATE ROLE {name} LOGIN NOSUPERUSER NOBYPASSRLS")
            a.execute(f"ALTER SCHEMA {schema} OWNER TO {names['owner']}")
        t = Team(url, _as(url, names["owner"]), _as(url, names["alice"]), _as(url, names["bob"]),
                 names)  # fmt: skip
        try:
            conn = db.open_url(t.owner, tenant="acme")
            assert conn.execute("SELECT current_setting('is_superuser')").fetchone()[0] == "off"
            for profile in ("acme", "globex", "shared"):
                fill(conn, profile)
            conn.set_tenant("")
            pg_roles.grant(conn, names["alice"], "acme", now=T0)
            pg_roles.grant(conn, names["alice"], "shared", now=T0)
            pg_roles.grant(conn, names["bob"], "globex", now=T0)
            pg_roles.grant(conn, names["bob"], "shared", now=T0)
            conn.close()
            yield t
        finally:
            with psycopg.connect(url, autocommit=True) as a:
                for name in names.values():
                    a.execute(f"REASSIGN OWNED BY {name} TO CURRENT_USER")
                    a.execute(f"DROP OWNED BY {name} CASCADE")
                    a.execute(f"DROP ROLE {name}")


def counts(url: str, tenant: str) -> dict[str, int]:
    """Rows of every tenant table a psycopg connection at ``url`` sees after setting
    ``rheo.tenant`` itself, as anyone may in psql."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as c:
        c.execute("SELECT set_config('rheo.tenant', %s, false)", (tenant,))
        return {t: c.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}


def test_neither_member_reads_the_other_through_psycopg_with_set_config(team):
    for who, own, other in (("alice", "acme", "globex"), ("bob", "globex", "acme")):
        url = getattr(team, who)
        mine = counts(url, own)
        assert all(mine[t] > 0 for t in TABLES if t != "purges"), mine
        assert counts(url, other) == dict.fromkeys(TABLES, 0), who
        # No tenant set, or a filter naming the other: still nothing.
        assert counts(url, "") == dict.fromkeys(TABLES, 0)
    # The owner reads each tenant it sets: the single login of before still works.
    assert counts(team.owner, "globex")["turns"] == 3
    assert counts(team.owner, "acme")["postings"] == counts(team.alice, "acme")["postings"]


def test_neither_member_writes_the_other_through_psycopg(team):
    import psycopg

    with psycopg.connect(team.alice, autocommit=True) as c:
        c.execute("SELECT set_config('rheo.tenant', 'globex', false)")
        refused = [
            "INSERT INTO sessions(profile, started_at, last_turn_at, turns) "
            "VALUES ('globex', 'x', 'x', 0)",
            "INSERT INTO jobs(profile, kind, ref_id, created_at, updated_at) "
            "VALUES ('globex', 'digest', 1, 'x', 'x')",
            "INSERT INTO postings(profile, kind, lexeme, doc, tf, dl) "
            "VALUES ('globex', 't', 'planted', 1, 1, 1)",
            "INSERT INTO kb_documents(profile, source, title, sha256, version, status, added_at, "
            "chars) VALUES ('globex', '/x', 'x', 'x', 1, 'active', 'x', 1)",
            "INSERT INTO tenant_grants(profile, member, granted_at) "
            f"VALUES ('globex', '{team.names['alice']}', 'x')",
        ]
        for sql in refused:
            with pytest.raises(psycopg.Error):
                c.execute(sql)
        for sql in ("UPDATE jobs SET status = 'failed'", "UPDATE sessions SET turns = 0",
                    "UPDATE memory_items SET status = 'retracted'",
                    "DELETE FROM postings", "DELETE FROM jobs", "DELETE FROM kb_documents",
                    "UPDATE profile_counters SET memory_generation = 0"):  # fmt: skip
            assert c.execute(sql).rowcount == 0, sql
        # Even naming her own profile in the row while the setting names another: refused.
        with pytest.raises(psycopg.Error):
            c.execute(
                "INSERT INTO jobs(profile, kind, ref_id, created_at, updated_at) "
                "VALUES ('acme', 'digest', 1, 'x', 'x')"
            )
    after = counts(team.owner, "globex")
    assert after["jobs"] == 1 and after["postings"] > 0 and after["kb_documents"] == 1
    assert counts(team.bob, "globex") == after


def test_through_rheo_a_member_opens_only_its_profiles_and_search_never_crosses(team):
    with pytest.raises(StoreError, match="not granted profile 'globex'"):
        db.open_url(team.alice, tenant="globex")
    conn = db.open_url(team.alice, tenant="acme")
    try:
        found = turns.search_turns(conn, "acme", SECRET)
        assert {t.content.split()[0] for t, _ in found} == {"acme"}
        assert {t.content.split()[0] for t, _ in turns.search_turns(conn, "acme", "秘密計画")} == {
            "acme"
        }
        # Naming the other profile in the engine's own calls: nothing.
        assert turns.search_turns(conn, "globex", SECRET) == []
        assert pgsearch.search_digests(conn, "globex", [f'"{SECRET}"'], 10) == []
        assert search_chunks(conn, "globex", SECRET) == []
        assert [c.content for c in search_chunks(conn, "acme", SECRET)] == ["acme notes"]
        # Switching the tenant on an open connection: row-level security still says no.
        conn.set_tenant("globex")
        assert turns.search_turns(conn, "globex", SECRET) == []
        assert pgsearch.plain_turn_ids(conn, "globex", [f'"{SECRET}"'], 10) == []
        with pytest.raises(DatabaseError):
            turns.append_turn(conn, profile="globex", role="user", content="planted", now=T0,
                              gap_s=7200)  # fmt: skip
    finally:
        conn.close()
    assert counts(team.owner, "globex")["turns"] == 3


def test_a_profile_granted_to_both_is_shared(team):
    alice = db.open_url(team.alice, tenant="shared")
    bob = db.open_url(team.bob, tenant="shared")
    try:
        turns.append_turn(alice, profile="shared", role="user", content="alice adds quokka",
                          now=T0 + timedelta(hours=1), gap_s=7200)  # fmt: skip
        found = turns.search_turns(bob, "shared", "quokka")
        assert [t.content for t, _ in found] == ["alice adds quokka"]
    finally:
        alice.close()
        bob.close()


def test_only_the_owner_grants_and_a_revoked_member_is_shut_out(team):
    alice = db.open_url(team.alice, tenant="")
    try:
        assert [(g.member, g.profile) for g in pg_roles.grants(alice)] == [
            (team.names["alice"], "acme"),
            (team.names["alice"], "shared"),
        ]  # her own grants only
        with pytest.raises(InvalidInput, match="only the owner"):
            pg_roles.grant(alice, team.names["alice"], "globex", now=T0)
    finally:
        alice.close()
    owner = db.open_url(team.owner, tenant="")
    try:
        assert len(pg_roles.grants(owner)) == 4
        with pytest.raises(NotFound, match="no role"):
            pg_roles.grant(owner, "nobody_at_all_here", "acme", now=T0)
        with pytest.raises(InvalidInput, match="invalid profile name"):
            pg_roles.grant(owner, team.names["alice"], "bad name!", now=T0)
        assert pg_roles.grant(owner, team.names["alice"], "acme", now=T0) is False
        assert pg_roles.revoke(owner, team.names["alice"], "acme") is True
        assert pg_roles.revoke(owner, team.names["alice"], "acme") is False
    finally:
        owner.close()
    with pytest.raises(StoreError, match="not granted profile 'acme'"):
        db.open_url(team.alice, tenant="acme")
    assert counts(team.alice, "acme") == dict.fromkeys(TABLES, 0)
    assert counts(team.alice, "shared")["turns"] == 3  # her other grant stands


@pytest.mark.boundary
def test_through_the_cli_other_profiles_are_refused_in_one_line(team, home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RHEO_DATABASE")}
    env.update(RHEO_HOME=str(home), RHEO_WORKER="off")
    alice = {**env, "RHEO_DATABASE_URL": team.alice}
    shown = run_rheo("--profile", "acme", "history", "search", SECRET, env=alice)
    assert shown.returncode == 0, shown.stderr
    assert "acme" in shown.stdout.decode() and "globex" not in shown.stdout.decode()
    for args in (("history", "recent"), ("memory", "list"), ("history", "search", SECRET)):
        refused = run_rheo("--profile", "globex", *args, env=alice)
        err = refused.stderr.decode()
        assert refused.returncode == 1, (args, err)
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert "not granted profile 'globex'" in err
    listed = run_rheo("team", "list", env=alice)
    assert listed.returncode == 0 and "acme" in listed.stdout.decode()
    assert "globex" not in listed.stdout.decode()
    refused = run_rheo("team", "grant", team.names["alice"], "globex", env=alice)
    assert refused.returncode == 2 and "only the owner" in refused.stderr.decode()
    assert counts(team.owner, "globex")["turns"] == 3


@pytest.mark.boundary
def test_the_team_commands_as_the_owner(team, home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("RHEO_DATABASE")}
    env.update(RHEO_HOME=str(home), RHEO_WORKER="off", RHEO_DATABASE_URL=team.owner)
    alice = team.names["alice"]
    done = run_rheo("team", "grant", alice, "globex", env=env)
    assert (
        done.returncode == 0 and f"granted profile globex to role {alice}" in done.stdout.decode()
    )
    assert run_rheo("--profile", "globex", "history", "recent",
                    env={**env, "RHEO_DATABASE_URL": team.alice}).returncode == 0  # fmt: skip
    listed = run_rheo("team", "list", "--json", env=env)
    assert listed.returncode == 0
    assert '"is_owner": true' in listed.stdout.decode()
    gone = run_rheo("team", "revoke", alice, "globex", env=env)
    assert gone.returncode == 0 and "revoked" in gone.stdout.decode()
    again = run_rheo("team", "revoke", alice, "globex", env=env)
    assert again.returncode == 2 and "has no grant" in again.stderr.decode()
    missing = run_rheo("team", "grant", "no_such_role_x", "acme", env=env)
    assert missing.returncode == 2 and "no role" in missing.stderr.decode()
    sqlite = {k: v for k, v in env.items() if k != "RHEO_DATABASE_URL"}
    local = run_rheo("team", "list", env=sqlite)
    assert local.returncode == 2 and "PostgreSQL" in local.stderr.decode()


def test_control_the_policy_of_before_lets_any_login_read_any_tenant_and_doctor_restores(team):
    """Without the membership check (m002's policy: only the tenant the client sets), alice
    reads globex's turns; `pg_health` finds the policy altered and puts rheo's back."""
    import psycopg

    from rheo_cli.memory.store.postgres import health as pg_health

    with psycopg.connect(team.admin, autocommit=True) as a:
        a.execute(
            "ALTER POLICY turns_tenant ON turns USING (profile = current_setting('rheo.tenant', "
            "true)) WITH CHECK (profile = current_setting('rheo.tenant', true))"
        )
    assert counts(team.alice, "globex")["turns"] == 3  # the hole part 3 closes
    owner = db.open_url(team.owner, tenant="")
    try:
        assert pg_health.rls_problems(owner) == ["turns: policy turns_tenant is not rheo's"]
        assert pg_health.repair_rls(owner) == ["row-level security of turns restored"]
        assert pg_health.rls_problems(owner) == []
    finally:
        owner.close()
    assert counts(team.alice, "globex")["turns"] == 0


def test_a_member_cannot_tie_its_rows_to_another_profiles_rows(team):
    """References carry the profile (m009): a row of acme pointing at globex's session, turn
    or memory item is refused, so alice can neither block globex's purge nor probe its ids."""
    import psycopg

    with psycopg.connect(team.owner, autocommit=True) as c:
        c.execute("SELECT set_config('rheo.tenant', 'globex', false)")
        session, turn = c.execute("SELECT session_id, id FROM turns LIMIT 1").fetchone()
        item = c.execute("SELECT max(id) FROM memory_items").fetchone()[0]
    with psycopg.connect(team.alice, autocommit=True) as c:
        c.execute("SELECT set_config('rheo.tenant', 'acme', false)")
        for sql, args in (
            ("INSERT INTO turns(profile, session_id, role, content, ts) "
             "VALUES ('acme', %s, 'user', 'x', 'x')", (session,)),
            ("INSERT INTO digests(profile, session_id, started_at, ended_at, narrative, "
             "created_at) VALUES ('acme', %s, 'x', 'x', 'x', 'x')", (session,)),
            ("UPDATE memory_items SET superseded_by = %s", (item,)),
            ("INSERT INTO memory_events(item_id, profile, ts, kind, cause, source_turn_id) "
             "SELECT id, 'acme', 'x', 'created', 'x', %s FROM memory_items LIMIT 1", (turn,)),
        ):  # fmt: skip
            with pytest.raises(psycopg.errors.IntegrityError):  # the reference, or unique
                c.execute(sql, args)
