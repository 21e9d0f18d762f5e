"""What PostgreSQL's row-level security does for rheo, exactly as the README says it: it
keeps a query that forgets its tenant filter inside the connection's tenant and refuses a
row written for another; the login that owns rheo's tables (here the test server's) may act
for every profile, as the single login of a personal setup always could. Members' logins,
each granted only its own profiles, are `test_pg_member_logins.py`. Skipped without
RHEO_TEST_DATABASE_URL."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import pytest
from conftest import pg_schema_url
from helpers import REPO, run_rheo

from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store import db
from rheo_cli.memory.store.errors import DatabaseError

pytestmark = pytest.mark.skipif(
    not os.environ.get("RHEO_TEST_DATABASE_URL"),
    reason="PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)",
)
NOW = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)


@pytest.mark.boundary
def test_row_level_security_scopes_queries_and_the_owner_acts_for_every_profile(home):
    with pg_schema_url() as url:
        for tenant in ("a", "b"):
            conn = db.open_url(url, tenant=tenant)
            ledger.append_turn(
                conn, profile=tenant, role="user", content=f"{tenant}'s secret", now=NOW, gap_s=7200
            )
            conn.close()
        conn = db.open_url(url, tenant="a")
        try:
            # The guard: no profile filter in the query, still only a's rows; b's refused.
            unfiltered = conn.execute("SELECT profile, content FROM turns").fetchall()
            assert [tuple(r) for r in unfiltered] == [("a", "a's secret")]
            with pytest.raises(DatabaseError):
                conn.execute(
                    "INSERT INTO sessions(profile, started_at, last_turn_at, turns) "
                    "VALUES ('b', '2026-04-01T09:00:00.000Z', '2026-04-01T09:00:00.000Z', 0)"
                )
            # The owner's login may act for every profile: it names another and reads it.
            conn.raw.execute("SELECT set_config('rheo.tenant', 'b', false)")
            other = conn.execute("SELECT profile, content FROM turns").fetchall()
            assert [tuple(r) for r in other] == [("b", "b's secret")]
        finally:
            conn.close()
        env = {**os.environ, "RHEO_HOME": str(home), "RHEO_DATABASE_URL": url}
        shown = run_rheo("--profile", "b", "history", "recent", env=env)
        assert shown.returncode == 0, shown.stderr
        assert "b's secret" in shown.stdout.decode()


def test_the_readme_says_what_the_isolation_is():
    readme = " ".join((REPO / "README.md").read_text().split())
    assert "anyone with the database URL can read and write every profile" not in readme
    assert "logins per member, each granted only its own profiles, are planned" not in readme
    assert "rheo team grant alice acme" in readme
    assert "SELECT set_config('rheo.tenant', 'other', false)` by a member not granted" in readme
    assert "shows no row of any table" in readme
