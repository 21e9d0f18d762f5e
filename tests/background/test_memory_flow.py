"""Durable memory end to end with the in-process fake model, with the clock set by RHEO_NOW:
extraction, digests, open items, write_memory, pins, and the source articles' examples."""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from fakeprovider import Canned, api_error, facts
from helpers import db_rows, kind_of, request_text, route

T0 = datetime.fromisoformat("2026-08-20T18:00:00+02:00")


def at(monkeypatch, when: datetime) -> None:
    monkeypatch.setenv("RHEO_NOW", when.isoformat())


def injected(request) -> str:
    """The text of a request's first user message: the injected sections and the message."""
    return "".join(b["text"] for b in request.messages[0]["content"] if b.get("type") == "text")


def section(request, name: str) -> str:
    """The body of one injected section of a request ('' if absent)."""
    sent = injected(request)
    marker = f"\n=== {name} ===\n"
    if marker not in "\n" + sent:
        return ""
    body = ("\n" + sent).split(marker, 1)[1]
    return body.split("\n=== ", 1)[0].split("\n---\n", 1)[0]


def chat_requests(fake_model):
    return [r for r in fake_model.requests if kind_of(r) == "chat"]


def test_school_example_fact_is_in_current_memory_two_weeks_later(rheo, fake_model, monkeypatch):
    route(
        fake_model,
        chat=["How exciting! Grade 9 is a big step.", "Let's make a list."],
        extract=facts(
            {
                "category": "fact",
                "topic": "arowyn school",
                "label": "Daughter Arowyn starts Grade 9 this fall",
                "properties": {"grade": 9},
                "confidence": 0.9,
                "reason": "explicit statement",
            }
        ),
    )
    at(monkeypatch, T0)
    assert rheo("ask", "My daughter Arowyn starts Grade 9 this fall.").exit_code == 0
    assert rheo("maintain").exit_code == 0
    listed = json.loads(rheo("memory", "list", "--json").stdout)
    assert [(m["topic"], m["content"]["label"]) for m in listed] == [
        ("arowyn-school", "Daughter Arowyn starts Grade 9 this fall")
    ]
    assert listed[0]["source_turn_id"] == 1 and listed[0]["confidence"] == 0.9

    at(monkeypatch, T0 + timedelta(days=14))
    assert rheo("ask", "What do I still need to prepare before school starts?").exit_code == 0
    last = chat_requests(fake_model)[-1]
    memory = section(last, "CURRENT MEMORY")
    assert "Daughter Arowyn starts Grade 9 this fall (grade: 9)" in memory
    assert "(fact, 2026-08-20)" in memory  # dated
    assert section(last, "CURRENT SESSION") == ""  # a new session: the fact came from memory


def test_commitment_is_an_open_item_until_done(rheo, fake_model, monkeypatch):
    route(
        fake_model,
        chat="Great, I'll check in.",
        extract=[
            facts(
                {
                    "category": "open_item",
                    "topic": "product catalog",
                    "label": "Upload the product catalog",
                    "due": "2026-08-21",
                    "confidence": 0.9,
                }
            ),
            facts(),
        ],
    )
    at(monkeypatch, T0)
    rheo("ask", "I'll upload the product catalog by Friday.")
    rheo("maintain")
    at(monkeypatch, T0 + timedelta(days=3))
    rheo("ask", "Morning! What's on today?")
    open_items = section(chat_requests(fake_model)[-1], "OPEN ITEMS")
    assert "Follow up on them proactively" in open_items
    assert "Upload the product catalog" in open_items and "due 2026-08-21" in open_items
    item_id = json.loads(rheo("items", "list", "--json").stdout)[0]["id"]
    assert rheo("items", "done", str(item_id)).exit_code == 0
    at(monkeypatch, T0 + timedelta(days=4))
    rheo("ask", "And today?")
    assert section(chat_requests(fake_model)[-1], "OPEN ITEMS") == ""
    assert json.loads(rheo("items", "list", "--all", "--json").stdout)[0]["status"] == "done"


def test_write_memory_tool_enforces_ownership(rheo, fake_model, monkeypatch, home):
    fake_model.add(
        Canned(
            "Noted. ",
            tool_calls=[
                (
                    "write_memory",
                    {
                        "category": "preference",
                        "topic": "coffee",
                        "profile": "mallory",
                        "source_turn_id": 999,
                        "label": "Takes coffee black",
                        "properties": {"sugar": False},
                        "confidence": 0.95,
                        "reason": "said so",
                    },
                )
            ],
        ),
        "I'll remember that you take it black.",
    )
    at(monkeypatch, T0)
    result = rheo("ask", "--profile", "work", "I take my coffee black.")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("Noted.") and "take it black" in result.stdout
    rows = db_rows(home, "SELECT profile, source, source_turn_id, label FROM memory_items")
    assert [tuple(r) for r in rows] == [("work", "tool", 1, "Takes coffee black")]
    # the tool result went back to Claude in the same turn
    second = fake_model.requests[1].messages
    assert second[1]["role"] == "assistant" and second[1]["content"][-1]["type"] == "tool_use"
    result_block = second[2]["content"][0]
    assert result_block["type"] == "tool_result" and "stored memory #1" in result_block["content"]
    assert "rheo decides these" in result_block["content"]
    meta = json.loads(db_rows(home, "SELECT meta FROM turns WHERE role='assistant'")[0][0])
    assert meta["tool_calls"][0]["name"] == "write_memory"
    assert json.loads(rheo("memory", "list", "--json").stdout) == []  # default profile: empty


def test_search_tools_answer_from_the_store(rheo, fake_model, monkeypatch):
    at(monkeypatch, T0)
    fake_model.add("ok")
    rheo("ask", "The plumber is called Jorge Alvarez.")
    at(monkeypatch, T0 + timedelta(days=30))
    fake_model.add(
        Canned(tool_calls=[("chat_search", {"query": "plumber"})]),
        "Jorge Alvarez.",
        Canned(tool_calls=[("memory_search", {"query": "plumber"})]),
        "Nothing stored.",
    )
    rheo("ask", "What was the plumber's name?")
    result = fake_model.requests[2].messages[2]["content"][0]["content"]
    assert "The plumber is called Jorge Alvarez." in result and "#1 [2026-08-20" in result
    rheo("ask", "Anything stored about him?")
    assert fake_model.requests[4].messages[2]["content"][0]["content"] == ("no stored facts match")


def test_always_remember_pins(rheo, fake_model, monkeypatch):
    route(
        fake_model,
        extract=facts(
            {
                "category": "fact",
                "topic": "allergy",
                "label": "Allergic to peanuts",
                "confidence": 0.9,
            }
        ),
    )
    at(monkeypatch, T0)
    rheo("ask", "Always remember that I'm allergic to peanuts.")
    rheo("maintain")
    item = json.loads(rheo("memory", "list", "--json").stdout)[0]
    assert item["pinned"] is True and item["confidence"] == 1.0
    shown = rheo("memory", "show", str(item["id"])).stdout
    assert "pinned" in shown and "created" in shown


def test_reinforcement_across_sessions(rheo, fake_model, monkeypatch):
    fact = {"category": "preference", "topic": "tea", "label": "Loves green tea", "confidence": 0.8}
    route(fake_model, extract=facts(fact))
    for day in (0, 3, 6):
        at(monkeypatch, T0 + timedelta(days=day))
        rheo("ask", "I love green tea.")
        rheo("maintain")
    item = json.loads(rheo("memory", "list", "--json").stdout)
    assert len(item) == 1
    assert item[0]["reinforcements"] == 3 and item[0]["stored_confidence"] == 1.0


def test_extractor_failure_never_touches_the_chat_and_is_retried(
    rheo, fake_model, monkeypatch, home
):
    route(fake_model, chat="fine", extract=Canned(error=api_error(500, "api_error", "down")))
    at(monkeypatch, T0)
    result = rheo("ask", "I moved to Lisbon.")
    assert result.exit_code == 0 and result.stdout == "fine\n"
    out = json.loads(rheo("maintain", "--json").stdout)
    assert out["done"] == [] and len(out["retrying"]) == 1
    job = json.loads(rheo("jobs", "list", "--json").stdout)[0]
    assert job["status"] == "pending" and job["attempts"] == 1
    assert "down" in job["last_error"]
    for _ in range(4):
        rheo("maintain")
    job = json.loads(rheo("jobs", "list", "--json").stdout)[0]
    assert job["status"] == "failed" and job["attempts"] == 5
    # the ledger is untouched
    assert [r[0] for r in db_rows(home, "SELECT status FROM turns WHERE role='assistant'")] == [
        "ok"
    ]


def test_fallback_extractor_is_used(rheo, fake_model, monkeypatch, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        '[extraction]\nmodel = "small-one"\nfallback = ["anthropic:backup-one"]\n'
    )

    def extract(rec):
        if rec.model == "small-one":
            return Canned(error=api_error(404, "not_found_error", "model: small-one"))
        return facts({"topic": "city", "label": "Lives in Lisbon", "confidence": 0.9})

    route(fake_model, extract=extract)
    at(monkeypatch, T0)
    rheo("ask", "I live in Lisbon.")
    out = json.loads(rheo("maintain", "--json").stdout)
    notes = out["done"][0]["notes"]
    assert any("fallback used after: anthropic:small-one" in n for n in notes)
    assert json.loads(rheo("memory", "list", "--json").stdout)[0]["content"]["label"] == (
        "Lives in Lisbon"
    )


def test_digest_when_a_session_closes(rheo, fake_model, monkeypatch, home):
    digest_json = json.dumps(
        {
            "narrative": "Planned the Lisbon trip; chose the 9 May flight.",
            "facts": [
                {
                    "category": "strategy",
                    "topic": "lisbon trip",
                    "label": "Flies to Lisbon on 9 May",
                    "confidence": 0.9,
                    "turn_id": 1,
                }
            ],
            "procedures": ["prefers aisle seats"],
            "decisions": ["take the 9 May flight"],
        }
    )
    route(fake_model, digest=digest_json)
    at(monkeypatch, T0)
    rheo("ask", "Let's plan the Lisbon trip.")
    at(monkeypatch, T0 + timedelta(minutes=10))
    rheo("ask", "I'll take the 9 May flight.")
    at(monkeypatch, T0 + timedelta(days=2))
    rheo("ask", "Hello again.")  # the gap passed: session 1 closed, its digest is due
    assert rheo("maintain").exit_code == 0
    digests = json.loads(rheo("digests", "list", "--json").stdout)
    assert len(digests) == 1
    d = digests[0]
    assert d["session_id"] == 1 and d["narrative"].startswith("Planned the Lisbon trip")
    assert d["started_at"] == "2026-08-20T16:00:00.000Z"
    assert d["ended_at"] == "2026-08-20T16:10:00.000Z"
    assert d["source_turn_ids"] == [1, 2, 3, 4]
    assert d["decisions"] == ["take the 9 May flight"]
    digest_request = next(r for r in fake_model.requests if kind_of(r) == "digest")
    # Summarisation only: no memory tools, just the forced call that shapes the answer.
    assert [t.name for t in digest_request.tools] == ["record_digest"]
    assert digest_request.tool_choice == "record_digest"
    assert "#1 [2026-08-20 18:00] person: Let's plan the Lisbon trip." in request_text(
        digest_request
    )
    item = json.loads(rheo("memory", "list", "--json").stdout)[0]
    assert item["content"]["label"] == "Flies to Lisbon on 9 May" and item["source_turn_id"] == 1
    shown = rheo("digests", "show", str(d["id"])).stdout
    assert "take the 9 May flight" in shown and "prefers aisle seats" in shown
    at(monkeypatch, T0 + timedelta(days=2, minutes=5))
    rheo("ask", "What did we decide?")
    episodic = section(chat_requests(fake_model)[-1], "EPISODIC MEMORY")
    assert "[2026-08-20 18:10] Planned the Lisbon trip" in episodic
    assert "Decided: take the 9 May flight" in episodic


def test_maintain_digests_sessions_closed_without_a_next_turn(rheo, fake_model, monkeypatch):
    route(fake_model)
    at(monkeypatch, T0)
    rheo("ask", "hello")
    at(monkeypatch, T0 + timedelta(hours=1))
    assert json.loads(rheo("maintain", "--json").stdout)["done"][0]["kind"] == "extract"
    assert json.loads(rheo("digests", "list", "--json").stdout) == []  # still open
    at(monkeypatch, T0 + timedelta(hours=3))
    out = json.loads(rheo("maintain", "--json").stdout)
    assert [j["kind"] for j in out["done"]] == ["digest"]
    assert len(json.loads(rheo("digests", "list", "--json").stdout)) == 1


def test_last_five_digests_newest_first(rheo, fake_model, monkeypatch):
    narratives = iter(f"Session number {n} happened." for n in range(1, 10))
    route(fake_model, digest=lambda rec: json.dumps({"narrative": next(narratives)}))
    for day in range(7):
        at(monkeypatch, T0 + timedelta(days=day))
        rheo("ask", f"day {day}")
        rheo("maintain")
    at(monkeypatch, T0 + timedelta(days=6, minutes=1))
    rheo("ask", "recap?")
    episodic = section(chat_requests(fake_model)[-1], "EPISODIC MEMORY")
    order = [n for n in range(1, 7) if f"Session number {n} happened." in episodic]
    assert order == [2, 3, 4, 5, 6]
    assert episodic.index("number 6") < episodic.index("number 2")


def test_conflicting_facts_are_flagged_and_resolved(rheo, fake_model, monkeypatch):
    route(
        fake_model,
        extract=[
            facts({"topic": "employer", "label": "Works at Acme", "confidence": 0.9}),
            facts({"topic": "employer", "label": "Works at Globex", "confidence": 0.9}),
        ],
    )
    at(monkeypatch, T0)
    rheo("ask", "I work at Acme.")
    rheo("maintain")
    at(monkeypatch, T0 + timedelta(days=1))
    rheo("ask", "I work at Globex.")
    rheo("maintain")
    pairs = json.loads(rheo("memory", "conflicts", "--json").stdout)
    assert [(p["newer"]["content"]["label"], p["older"]["content"]["label"]) for p in pairs] == [
        ("Works at Globex", "Works at Acme")
    ]
    older = pairs[0]["older"]["id"]
    assert rheo("memory", "resolve", str(older)).exit_code == 0
    assert json.loads(rheo("memory", "conflicts", "--json").stdout) == []
    active = json.loads(rheo("memory", "list", "--json").stdout)
    assert [m["content"]["label"] for m in active] == ["Works at Acme"]
    shown = json.loads(rheo("memory", "show", str(older), "--json").stdout)
    assert [e["kind"] for e in shown["history"]] == [
        "created",
        "superseded",
        "conflict_flagged",
        "resolved",
    ]
    assert shown["versions"] == [1, 2]


def test_extraction_prompt_shows_known_facts_and_exchange(rheo, fake_model, monkeypatch):
    route(fake_model, chat="Sure.")
    at(monkeypatch, T0)
    rheo("memory", "add", "Has a dog named Rex", "--topic", "dog")
    rheo("ask", "Rex needs a vet appointment.")
    rheo("maintain")
    extract = next(r for r in fake_model.requests if kind_of(r) == "extract")
    body = request_text(extract)
    assert extract.model == "claude-haiku-5-5"
    assert "#1 [fact] dog: Has a dog named Rex" in body
    assert "Person: Rex needs a vet appointment." in body and "Assistant: Sure." in body
    assert "Date of the exchange: Thursday 2026-08-20 18:00 +0200" in body
