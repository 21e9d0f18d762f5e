"""Sessions are named by the number a person sees (``s3`` in 'rheo sessions list'), on both
stores: 'rheo purge session N' takes that number, confirms by it and the session's first
words, and numbers never shift: a purged session leaves a gap, a new one takes the next."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import BACKENDS, pg_schema_url
from helpers import route

from rheo_cli.cli import purge_cmd


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """rheo on a SQLite file in RHEO_HOME, or on a fresh schema of the test PostgreSQL."""
    if request.param == "sqlite":
        yield "sqlite"
        return
    if not os.environ.get("RHEO_TEST_DATABASE_URL"):
        pytest.skip("PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)")
    with pg_schema_url() as url:
        monkeypatch.setenv("RHEO_DATABASE_URL", url)
        yield "postgres"


def numbers(rheo: Any, *profile: str) -> dict[int, int]:
    """{session number: turns} as 'rheo sessions list --json' shows them."""
    out = rheo(*profile, "sessions", "list", "--json")
    assert out.exit_code == 0, out.stderr
    return {s["number"]: s["turns"] for s in json.loads(out.stdout)}


def test_purge_takes_the_number_shown_and_numbers_never_shift(rheo, fake_model, store, monkeypatch):
    route(fake_model)
    # Another profile first, so the store's ids and the numbers shown differ from the start.
    assert rheo("-p", "work", "ask", "work one").exit_code == 0
    assert rheo("-p", "work", "ask", "--new", "work two").exit_code == 0
    for word in ("alpha", "bravo", "charlie"):
        assert rheo("ask", "--new", f"{word} is the topic of this session").exit_code == 0
    assert set(numbers(rheo)) == {1, 2, 3}

    asked: list[str] = []

    def confirm(question: str) -> bool:
        asked.append(question)
        return False

    with monkeypatch.context() as m:
        m.setattr(purge_cmd, "_confirm", confirm)
        declined = rheo("purge", "session", "s2")
    assert declined.exit_code == 1
    assert asked and "session s2" in asked[0] and '"bravo is the topic of this' in asked[0]
    assert "#" not in asked[0].split(":")[0]  # never the store's id

    result = rheo("purge", "session", "1", "--yes")
    assert result.exit_code == 0, result.stderr
    assert "purged session s1" in result.stdout
    assert set(numbers(rheo)) == {2, 3}  # a gap, not s1 and s2 again
    result = rheo("purge", "session", "2", "--yes", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["purged"] == "session s2"
    left = rheo("history", "search", "topic")
    assert "charlie" in left.stdout and "bravo" not in left.stdout and "alpha" not in left.stdout

    missing = rheo("purge", "session", "1", "--yes")
    assert missing.exit_code != 0 and missing.stderr.count("\n") == 1
    assert "no session s1" in missing.stderr and "Traceback" not in missing.stderr

    # The last number is not given again: purging s3 and starting a session gives s4.
    assert rheo("purge", "session", "s3", "--yes").exit_code == 0
    assert rheo("ask", "--new", "delta").exit_code == 0
    assert set(numbers(rheo)) == {4}
    shown = rheo("sessions", "show", "s4")
    assert shown.exit_code == 0 and "delta" in shown.stdout
    # The other profile kept its own numbers all along.
    assert numbers(rheo, "-p", "work") == {1: 2, 2: 2}
    assert rheo("-p", "work", "purge", "session", "4", "--yes").exit_code != 0


def test_ask_session_continues_the_session_by_its_number(rheo, fake_model, store):
    route(fake_model)
    assert rheo("-p", "work", "ask", "work one").exit_code == 0
    assert rheo("ask", "first").exit_code == 0
    assert rheo("ask", "--new", "second").exit_code == 0
    assert rheo("purge", "session", "s1", "--yes").exit_code == 0
    assert rheo("ask", "--session", "2", "again").exit_code == 0
    assert numbers(rheo) == {2: 4}
    wrong = rheo("ask", "--session", "1", "nope")
    assert wrong.exit_code != 0 and "Traceback" not in wrong.stderr


def test_ask_session_takes_the_number_as_listings_write_it(rheo, fake_model, store):
    route(fake_model)
    assert rheo("ask", "first").exit_code == 0
    assert rheo("ask", "--new", "second").exit_code == 0
    joined = rheo("ask", "--session", "s1", "--json", "back to the first")
    assert joined.exit_code == 0, joined.stderr
    assert json.loads(joined.stdout)["session_number"] == 1
    for bad in ("sx", "s0", "-3"):
        refused = rheo("ask", "--session", bad, "nope")
        assert refused.exit_code == 2 and "is not a session number" in refused.stderr, bad
