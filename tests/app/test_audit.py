"""``rheo memory audit``: duplicates, facts nobody said again for months, facts that look
like secrets, facts a model or a client wrote, and what CURRENT MEMORY costs — each with the
command that fixes it, read only — on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import BACKENDS, pg_schema_url


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


def add(rheo: Any, monkeypatch: pytest.MonkeyPatch, when: str, label: str, topic: str) -> int:
    monkeypatch.setenv("RHEO_NOW", when)
    out = rheo("memory", "add", label, "-t", topic, "--json")
    assert out.exit_code == 0, out.stderr
    return int(json.loads(out.stdout)["item"]["id"])


def test_the_audit_finds_each_kind_with_its_fix(rheo, store, monkeypatch):
    from rheo_cli.app.app import build
    from rheo_cli.app.tools import actions
    from rheo_cli.app.tools.caller import Caller

    old = add(rheo, monkeypatch, "2026-01-05T09:00:00Z", "Ana was born in Porto", "birthplace")
    pets = add(rheo, monkeypatch, "2026-05-04T09:00:00Z", "Ana has a dog Rex and a cat Tom", "pets")
    dog = add(rheo, monkeypatch, "2026-05-04T10:00:00Z", "Ana's dog is Rex", "dog")
    pin = add(rheo, monkeypatch, "2026-05-04T11:00:00Z", "Ana's bank card PIN is 4821", "bank")
    tea = add(rheo, monkeypatch, "2026-05-04T12:00:00Z", "Ana likes green tea", "tea")
    with build() as app:
        out = actions.write_memory(
            app, Caller.named("claude-code", "2.1"), category="fact", topic="desk",
            label="Ana has a standing desk", properties=None, confidence=None, reason=None,
            due=None,
        )  # fmt: skip
        assert out.startswith("stored memory")
    monkeypatch.setenv("RHEO_NOW", "2026-05-10T09:00:00Z")
    before = rheo("memory", "list", "--json", "--all").stdout
    report = json.loads(rheo("memory", "audit", "--json").stdout)
    found = {(f["kind"], tuple(f["items"])): f["fix"] for f in report["findings"]}
    assert found[("duplicate", (pets, dog))] == "rheo maintain"
    assert (
        found[("unreinforced", (old,))] == f"rheo memory pin {old}  (or: rheo memory forget {old})"
    )
    assert found[("secret", (pin,))] == f"rheo memory forget {pin}"
    client = [items for kind, items in found if kind == "written_for"]
    assert len(client) == 1 and client[0][0] not in {old, pets, dog, pin, tea}
    assert not [k for k in found if tea in k[1]]  # a plain fact stated lately: nothing to fix
    assert report["facts"] == 6 and report["tokens"] > 0 and report["budget"] > 0
    assert rheo("memory", "list", "--json", "--all").stdout == before  # it only reads
    shown = rheo("memory", "audit")
    assert shown.exit_code == 0
    assert "duplicates (1):" in shown.stdout and "fix: rheo maintain" in shown.stdout
    assert "look like secrets (1):" in shown.stdout and "4821" not in shown.stdout


def test_over_its_share_current_memory_says_what_to_lower(rheo, store, monkeypatch):
    for n in range(12):
        add(rheo, monkeypatch, "2026-05-04T09:00:00Z",
            f"Ana's friend number {n} lives in a different city with a long name {n}",
            f"friend {n}")  # fmt: skip
    assert rheo("config", "set", "context.budget", "600").exit_code == 0
    report = json.loads(rheo("memory", "audit", "--json").stdout)
    cost = [f for f in report["findings"] if f["kind"] == "tokens"]
    assert len(cost) == 1 and report["budget"] == 600
    assert cost[0]["fix"].startswith("rheo config set memory.cap ")
    assert 0 < int(cost[0]["fix"].rsplit(" ", 1)[1]) < 12


def test_an_empty_memory_has_nothing_to_fix(rheo, store):
    out = rheo("memory", "audit")
    assert out.exit_code == 0 and "nothing to fix" in out.stdout
