"""Memory over months, each problem people reported tried again as written: through ``rheo
ask``, ``rheo maintain``, ``rheo context``, ``rheo memory`` and ``rheo doctor`` with the fake
Messages API, on SQLite and on PostgreSQL (and with the Redis hot cache).

The extractor writes facts in the third person ("Ana uses Neovim"), as a model does."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from conftest import BACKENDS, pg_schema_url
from fakeprovider import facts
from helpers import kind_of, request_text, route

MONDAY = "2026-05-04T09:00:00+01:00"


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


def person_said(rec: Any) -> str:
    """What the person said in the exchange an extraction request shows."""
    body = request_text(rec)
    return body.split("Person: ", 1)[1].split("\nAssistant: ", 1)[0] if "Person: " in body else ""


def extractor(known: dict[str, dict[str, Any]]) -> Any:
    """An extractor answering with the fact filed under the first key the person said."""

    def answer(rec: Any) -> Any:
        said = person_said(rec)
        for key, fact in known.items():
            if key in said:
                return facts({"relation": "new", "confidence": 0.9, **fact})
        return facts()

    return answer


def chats(fake_model: Any) -> list[str]:
    """The text of every chat request sent so far."""
    return [request_text(r) for r in fake_model.requests if kind_of(r) == "chat"]


def at(monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    monkeypatch.setenv("RHEO_NOW", when)


def ask(rheo: Any, message: str) -> Any:
    out = rheo("ask", message)
    assert out.exit_code == 0, out.stderr
    return out


def section(rheo: Any, message: str, name: str, *args: str) -> str:
    """The text of context section ``name`` for ``message`` (``""`` when left out)."""
    out = rheo("context", "--json", *args, message)
    assert out.exit_code == 0, out.stderr
    found = [s["text"] for s in json.loads(out.stdout)["sections"] if s["name"] == name]
    return found[0] if found else ""


def memories(rheo: Any, *args: str) -> list[dict[str, Any]]:
    return json.loads(rheo("memory", "list", "--json", *args).stdout)


NEOVIM = {"category": "preference", "topic": "editor", "label": "Ana uses Neovim"}
PASSPORT = {"category": "fact", "topic": "passport", "label": "Ana's passport number is X1234567"}


def test_forget_that_i_use_neovim_forgets_ana_uses_neovim(rheo, fake_model, store, monkeypatch):
    route(fake_model, chat="Noted.", extract=extractor({"Neovim": NEOVIM, "passport": PASSPORT}))
    at(monkeypatch, MONDAY)
    ask(rheo, "I use Neovim for everything.")
    ask(rheo, "My passport number is X1234567.")
    assert rheo("maintain").exit_code == 0
    assert {m["content"]["label"] for m in memories(rheo)} == {
        "Ana uses Neovim",
        "Ana's passport number is X1234567",
    }
    forgot = ask(rheo, "Forget that I use Neovim.")
    assert re.search(r"note: memory: forgot #\d+ \(Ana uses Neovim\)", forgot.stderr)
    passport = ask(rheo, "forget my passport number")
    assert re.search(
        r"note: memory: forgot #\d+ \(Ana's passport number is ••••\)", passport.stderr
    )
    nothing = ask(rheo, "Please forget that I own a boat.")
    assert (
        'nothing stored matches "I own a boat"; it will not be learnt from what was said '
        'before; look with: rheo memory search "own boat"'
    ) in nothing.stderr
    assert memories(rheo) == []
    # The model is told what was done, never what was forgotten.
    told = chats(fake_model)[-3]
    assert "rheo already acted on the person's memory request" in told and "forgot #" in told


def test_a_forgotten_fact_never_reaches_the_model_again(rheo, fake_model, store, monkeypatch):
    """Same session (CURRENT SESSION), next session (EPISODIC MEMORY: the previous session's
    end), later (RELEVANT HISTORY); the "forget that …" turn itself is not injected again."""
    route(
        fake_model,
        chat=lambda rec: "Neovim, nice." if "Neovim" in person_said_chat(rec) else "OK.",
        extract=extractor({"Neovim": NEOVIM}),
    )
    at(monkeypatch, MONDAY)
    ask(rheo, "I use Neovim every day.")
    ask(rheo, "Let's plan the Porto trip.")
    assert rheo("maintain").exit_code == 0
    ask(rheo, "Forget that I use Neovim.")
    ask(rheo, "What about dinner?")  # same session
    at(monkeypatch, "2026-05-04T15:00:00+01:00")
    ask(rheo, "Back again, what were we planning?")  # next session, no digest yet
    assert rheo("maintain").exit_code == 0  # digests written
    at(monkeypatch, "2026-05-20T09:00:00+01:00")
    ask(rheo, "Which editor did I say I use, Vim or Neovim?")  # later: history search
    sent = chats(fake_model)
    for request in sent[3:]:
        context = request.rsplit("\n---\n", 1)[0]
        assert "Neovim" not in context, context
    assert "Porto" in sent[4] and "Porto" in sent[5]
    listed = json.loads(rheo("history", "recent", "--json", "-n", "50").stdout)
    assert sum("Neovim" in t["content"] for t in listed) >= 4  # the ledger keeps them


def person_said_chat(rec: Any) -> str:
    """The person's message of a chat request (after the last ``---``)."""
    return request_text(rec).rsplit("\n---\n", 1)[-1]


def test_please_forget_my_social_security_number_is_never_injected(
    rheo, fake_model, store, monkeypatch
):
    ssn = {
        "category": "fact",
        "topic": "ssn",
        "label": "Ana's social security number is 123-45-6789",
    }
    route(fake_model, chat="Saved: 123-45-6789.", extract=extractor({"social security": ssn}))
    at(monkeypatch, MONDAY)
    ask(rheo, "My social security number is 123-45-6789.")
    assert rheo("maintain").exit_code == 0
    ask(rheo, "Please forget my social security number.")
    ask(rheo, "What is my social security number?")
    at(monkeypatch, "2026-06-01T09:00:00+01:00")
    ask(rheo, "social security number 123?")
    for request in chats(fake_model)[1:]:
        assert "6789" not in request.rsplit("\n---\n", 1)[0]
    context = rheo("context", "my social security number")
    assert context.exit_code == 0 and "6789" not in context.stdout


def test_a_changed_fact_is_marked_where_the_old_value_is_injected(
    rheo, fake_model, store, monkeypatch
):
    boston = {"category": "fact", "topic": "home", "label": "Ana lives in Boston"}
    lisbon = {"category": "fact", "topic": "home", "label": "Ana lives in Lisbon"}
    route(
        fake_model,
        chat=lambda rec: "Boston, great." if "Boston" in person_said_chat(rec) else "OK.",
        extract=extractor({"Boston": boston, "Lisbon": lisbon}),
    )
    at(monkeypatch, MONDAY)
    ask(rheo, "I live in Boston.")
    assert rheo("maintain").exit_code == 0
    ask(rheo, "I moved to Lisbon.")
    assert rheo("maintain").exit_code == 0
    # An explicit change: no conflict for the person to resolve.
    assert json.loads(rheo("memory", "conflicts", "--json").stdout) == []
    session = section(rheo, "any tips for dinner?", "CURRENT SESSION")
    assert session.count("now: Ana lives in Lisbon") == 2  # "I live in Boston" and the echo
    at(monkeypatch, "2026-05-04T15:00:00+01:00")
    episodic = section(rheo, "hello", "EPISODIC MEMORY")
    assert episodic.count("now: Ana lives in Lisbon") == 2


def test_two_confident_facts_without_a_signal_still_conflict(rheo, store, monkeypatch):
    at(monkeypatch, MONDAY)
    rheo("memory", "add", "Ana lives in Boston", "-t", "home")
    out = rheo("memory", "add", "Ana lives in Lisbon", "-t", "home")
    assert "flagged for review" in out.stdout
    moved = rheo("memory", "add", "Ana moved to Porto", "-t", "home")
    assert "superseding" in moved.stdout and "flagged" not in moved.stdout


def test_dated_plans_end(rheo, fake_model, store, monkeypatch):
    paris = {"category": "fact", "topic": "trip", "label": "Ana is in Paris until Friday"}
    sister = {"category": "team", "topic": "sister visit", "label": "Ana's sister visits next week"}
    route(fake_model, chat="OK.", extract=extractor({"Paris": paris, "sister": sister}))
    monkeypatch.setenv("TZ", "Europe/Lisbon")
    at(monkeypatch, "2026-05-04T09:00:00")  # a Monday, in Lisbon
    ask(rheo, "I'm in Paris until Friday.")
    ask(rheo, "My sister visits next week.")
    assert rheo("maintain").exit_code == 0
    by_label = {m["content"]["label"]: m for m in memories(rheo)}
    assert by_label["Ana is in Paris until Friday"]["valid_until"] == "2026-05-08T22:59:00.000Z"
    assert by_label["Ana's sister visits next week"]["valid_from"] == "2026-05-10T23:00:00.000Z"
    assert "Paris" in section(rheo, "weekend plans?", "CURRENT MEMORY")
    at(monkeypatch, "2026-05-09T00:30:00")  # Saturday, just past the end of Friday there
    assert "Paris" not in section(rheo, "weekend plans in Paris?", "CURRENT MEMORY")
    assert [m["content"]["label"] for m in memories(rheo)] == ["Ana's sister visits next week"]
    monkeypatch.setenv("COLUMNS", "200")  # the whole line, not cut to the terminal's width
    listed = rheo("memory", "list", "--all").stdout
    assert re.search(r"\[expired 2026-05-08\] Ana is in Paris until Friday", listed), listed
    found = rheo("memory", "search", "Paris").stdout
    assert "Ana is in Paris until Friday" in found and "expired" in found
    at(monkeypatch, "2026-05-18T09:00:00")
    assert memories(rheo) == []


def test_an_unparseable_extraction_fails_visibly(rheo, fake_model, store, monkeypatch):
    route(fake_model, chat="OK.", extract="Sure! The person likes tea.")
    at(monkeypatch, MONDAY)
    ask(rheo, "I like tea.")
    for _ in range(3):
        rheo("maintain")
    job = json.loads(rheo("jobs", "list", "--json").stdout)[0]
    assert job["status"] == "failed" and job["attempts"] == 3
    assert "could not be read" in job["last_error"]
    assert "failed after 3 attempts" in rheo("jobs", "list").stdout
    doctor = rheo("doctor", "--json")
    assert doctor.exit_code == 1
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert not checks["jobs"]["ok"]
    route(fake_model, chat="OK.", extract=facts({"topic": "tea", "label": "Ana likes tea"}))
    assert rheo("maintain", "--retry-failed").exit_code == 0
    assert [m["content"]["label"] for m in memories(rheo)] == ["Ana likes tea"]


def test_at_a_small_budget_the_facts_are_the_last_to_go(rheo, fake_model, store, monkeypatch):
    route(fake_model, chat="A long answer about something else entirely, " * 8)
    at(monkeypatch, MONDAY)
    rheo("memory", "add", "Ana lives in Lisbon, Rua Augusta 12", "-t", "home")
    rheo("memory", "add", "send the tax form", "-t", "tax", "--due", "friday")
    for n in range(4):
        ask(rheo, f"Tell me a long story about dragons, chapter {n}, with many details.")
    out = rheo("context", "--budget", "150", "where do I live?")
    assert out.exit_code == 0, out.stderr
    assert "Ana lives in Lisbon" in out.stdout and "send the tax form" in out.stdout
    info = json.loads(rheo("context", "--budget", "150", "--json", "where do I live?").stdout)
    assert info["context_tokens"] <= 150


def test_polite_requests_are_taken(rheo, fake_model, store, monkeypatch):
    route(fake_model, chat="OK.")
    at(monkeypatch, MONDAY)
    ask(rheo, "Merk dir bitte, dass ich in Berlin wohne.")
    assert [m["content"]["label"] for m in memories(rheo)] == ["Ich in Berlin wohne"]
    rheo("memory", "add", "Ana's phone number is 555-0134", "-t", "phone")
    out = ask(rheo, "please forget my phone number")
    assert "forgot #" in out.stderr
    assert [m["content"]["label"] for m in memories(rheo)] == ["Ich in Berlin wohne"]


def test_the_cap_evicts_client_writes_before_what_the_person_stated(rheo, store, monkeypatch):
    from rheo_cli.app.app import build
    from rheo_cli.app.tools import actions
    from rheo_cli.app.tools.caller import Caller

    at(monkeypatch, MONDAY)
    assert rheo("memory", "add", "Ana is allergic to penicillin", "-t", "allergy").exit_code == 0
    with build() as app:
        caller = Caller.named("claude-code", "2.1")
        for n in range(55):
            out = actions.write_memory(
                app, caller, category="fact", topic=f"note {n}", label=f"Client note {n}",
                properties=None, confidence=None, reason=None, due=None,
            )  # fmt: skip
            assert out.startswith("stored memory")
    labels = {m["content"]["label"] for m in memories(rheo)}
    assert "Ana is allergic to penicillin" in labels and len(labels) == 50
