"""The memory review (``rheo maintain``, and in the background after a session closes): a
small model proposes merges and supersessions, rheo applies them through the rules of any
change, nothing is deleted, every change is an event with a reason, and a reply that cannot
be read changes nothing and fails the job visibly — on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import BACKENDS, pg_schema_url
from fakeprovider import Canned
from helpers import kind_of, request_text, route


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
    """Add a memory by hand at ``when``; its id."""
    monkeypatch.setenv("RHEO_NOW", when)
    out = rheo("memory", "add", label, "-t", topic, "--json")
    assert out.exit_code == 0, out.stderr
    return int(json.loads(out.stdout)["item"]["id"])


def listed(rheo: Any, *args: str) -> dict[int, dict[str, Any]]:
    out = rheo("memory", "list", "--json", *args)
    assert out.exit_code == 0, out.stderr
    return {m["id"]: m for m in json.loads(out.stdout)}


def actions(*entries: dict[str, Any]) -> Any:
    return Canned(json.dumps({"actions": list(entries)}))


def reviews(fake_model: Any) -> list[str]:
    return [request_text(r) for r in fake_model.requests if kind_of(r) == "consolidate"]


def test_a_near_duplicate_is_merged_into_one_item_and_nothing_is_deleted(rheo, fake_model, store,
                                                                         monkeypatch):  # fmt: skip
    pets = add(rheo, monkeypatch, "2026-05-04T09:00:00Z", "Ana has a dog Rex and a cat Tom", "pets")
    dog = add(rheo, monkeypatch, "2026-05-05T09:00:00Z", "Ana's dog is Rex", "dog")
    route(fake_model, consolidate=actions(
        {"action": "duplicate", "keep": dog, "drop": [pets], "reason": "same dog"}
    ))  # fmt: skip
    out = rheo("maintain")
    assert out.exit_code == 0, out.stderr
    sent = reviews(fake_model)
    assert len(sent) == 1 and f"#{pets} " in sent[0] and f"#{dog} " in sent[0]
    # The fuller wording is kept whichever the model named: no third item, nothing lost.
    active = listed(rheo)
    assert [m["content"]["label"] for m in active.values()] == ["Ana has a dog Rex and a cat Tom"]
    every = listed(rheo, "--all")
    assert set(every) == {pets, dog} and every[dog]["status"] == "superseded"
    assert every[dog]["superseded_by"] == pets
    shown = json.loads(rheo("memory", "show", str(dog), "--json").stdout)
    assert any(
        e["kind"] == "superseded" and "consolidation" in e["cause"] and "same dog" in e["cause"]
        for e in shown["history"]
    ), shown["history"]
    jobs = json.loads(rheo("jobs", "list", "--json").stdout)
    assert [(j["kind"], j["status"]) for j in jobs] == [("consolidate", "done")]
    assert "memory review" in rheo("jobs", "list").stdout


def test_a_fact_a_later_one_made_stale_is_superseded_with_its_reason(rheo, fake_model, store,
                                                                     monkeypatch):  # fmt: skip
    acme = add(rheo, monkeypatch, "2026-05-04T09:00:00Z", "Ana works at Acme", "work")
    globex = add(rheo, monkeypatch, "2026-06-04T09:00:00Z", "Ana's job is at Globex now", "job")
    tea = add(rheo, monkeypatch, "2026-06-05T09:00:00Z", "Ana likes green tea", "tea")
    route(fake_model, consolidate=actions(
        {"action": "stale", "keep": globex, "drop": [acme], "reason": "new job"},
        {"action": "stale", "keep": acme, "drop": [globex], "reason": "backwards"},
    ))  # fmt: skip
    assert rheo("maintain").exit_code == 0
    every = listed(rheo, "--all")
    assert every[acme]["status"] == "superseded" and every[acme]["superseded_by"] == globex
    assert every[globex]["status"] == "active" and every[globex]["conflict"] is None
    assert every[tea]["status"] == "active"  # shares nothing: never sent, never changed
    assert all(f"#{tea} " not in r for r in reviews(fake_model))
    notes = json.loads(rheo("jobs", "list", "--json").stdout)[0]["notes"]
    assert any(f"#{acme} made stale by #{globex} (new job)" in n for n in notes), notes
    # The backwards proposal (an older fact replacing a newer one) was refused, and said so.
    assert any("it stays current" in n or "no longer both active" in n for n in notes), notes


@pytest.mark.parametrize("reply", ["", "These facts all look fine to me.", '{"facts": []}'])
def test_an_unreadable_review_changes_nothing_and_fails_visibly(
    rheo, fake_model, store, monkeypatch, reply
):
    pets = add(rheo, monkeypatch, "2026-05-04T09:00:00Z", "Ana has a dog Rex and a cat Tom", "pets")
    dog = add(rheo, monkeypatch, "2026-05-05T09:00:00Z", "Ana's dog is Rex", "dog")
    route(fake_model, consolidate=reply)
    for _ in range(3):
        assert rheo("maintain").exit_code == 0
    assert set(listed(rheo)) == {pets, dog}  # nothing changed
    job = json.loads(rheo("jobs", "list", "--json").stdout)[0]
    assert (job["kind"], job["status"], job["attempts"]) == ("consolidate", "failed", 3)
    assert "memory review" in rheo("jobs", "list").stdout
    doctor = rheo("doctor", "--json")
    assert doctor.exit_code == 1
    assert not {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}["jobs"]["ok"]
    # Failed for good, it is not launched again by the next maintain...
    asked = len(reviews(fake_model))
    add(rheo, monkeypatch, "2026-05-06T09:00:00Z", "Ana's cat is Tom", "cat")
    assert rheo("maintain").exit_code == 0
    assert len(reviews(fake_model)) == asked
    # ...but by --retry-failed, with a reply that reads.
    route(fake_model, consolidate=actions(
        {"action": "duplicate", "keep": pets, "drop": [dog], "reason": "same dog"}
    ))  # fmt: skip
    assert rheo("maintain", "--retry-failed").exit_code == 0
    assert dog not in listed(rheo) and pets in listed(rheo)


@pytest.mark.parametrize(("written", "reviewed"), [(2, False), (3, True)])
def test_a_closed_session_queues_a_review_once_enough_facts_were_written(
    rheo, fake_model, store, monkeypatch, written, reviewed
):
    """In the background (a session's digest, not ``rheo maintain``), a review is queued only
    once three facts were written since the last one."""
    from rheo_cli.app import jobs
    from rheo_cli.app.app import build

    labels = ["Ana has a dog Rex and a cat Tom", "Ana's dog is Rex", "Ana's cat Tom is old"]
    for n, label in enumerate(labels[:written]):
        add(rheo, monkeypatch, f"2026-05-04T09:0{n}:00Z", label, f"pet {n}")
    route(fake_model, chat="Noted.")
    assert rheo("ask", "Hello there.").exit_code == 0
    monkeypatch.setenv("RHEO_NOW", "2026-05-04T15:00:00Z")  # the session closed by time
    with build() as app:
        assert jobs.queue_digests(app)
        summary = jobs.run_pending(app)
        kinds = sorted(j.kind for j in jobs.jobs(app))
    assert not summary.failed
    assert ("consolidate" in kinds) is reviewed
    assert bool(reviews(fake_model)) is reviewed
