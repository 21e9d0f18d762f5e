"""``rheo team`` where the store has no logins of its own (the SQLite file): refused in one
line, exit 2, nothing created. On PostgreSQL: tests/memory/store/test_pg_member_logins.py."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "args", [("team", "list"), ("team", "grant", "alice", "acme"), ("team", "revoke", "a", "b")]
)
def test_team_commands_on_sqlite_are_refused_and_create_nothing(rheo, home, monkeypatch, args):
    monkeypatch.delenv("RHEO_DATABASE_URL", raising=False)
    result = rheo(*args)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "rheo: team logins need memory on PostgreSQL (set RHEO_DATABASE_URL); a SQLite store "
        "belongs to whoever can read its file"
    ]
    assert not (home / "rheo.db").exists()
