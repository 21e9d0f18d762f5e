"""``rheo purge`` erasing a profile while one of its questions is being answered: the ask
ends with one runtime line (exit 1) saying so, never a usage code naming an internal id."""

from __future__ import annotations

from datetime import UTC, datetime

from helpers import db_rows, kind_of

from rheo_cli.memory import purge
from rheo_cli.memory.store import db


def purging_reply(home, profile):
    def answer(rec):
        if kind_of(rec) != "chat":
            return '{"facts": []}'
        conn = db.open_store(home / "rheo.db")
        try:
            target = purge.plan(conn, profile=profile, what="profile", ref_id=None)
            purge.purge(conn, target, now=datetime.now(UTC))
        finally:
            conn.close()
        return "a reply that came too late"

    return answer


def test_an_ask_whose_profile_is_purged_meanwhile_fails_as_a_runtime_race(rheo, fake_model, home):
    assert rheo("-p", "gina", "ask", "first").exit_code == 0
    fake_model.handler = purging_reply(home, "gina")
    result = rheo("-p", "gina", "ask", "second")
    assert result.exit_code == 1, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("rheo: ") and "purged meanwhile" in line
    assert "#" not in line and "Traceback" not in result.stderr
    assert db_rows(home, "SELECT count(*) FROM turns WHERE profile = 'gina'")[0][0] == 0
