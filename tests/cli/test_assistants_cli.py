"""Assistants from the command line: ``--assistant NAME`` / ``RHEO_ASSISTANT`` with
``[assistants.NAME]`` in config.toml (prompt file, model), the memory each one sees, the
extractor marking facts shared or specific, and unknown names refused."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from fakeprovider import Canned, facts
from helpers import db_rows, kind_of, route

T0 = datetime.fromisoformat("2026-03-16T09:00:00+01:00")
SARAH_PROMPT = "You are Sarah, the customer service assistant of Acme Plumbing."


@pytest.fixture
def team(home, monkeypatch):
    """A config with two assistants (Sarah with a prompt file and her own model, Marcus)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "sarah.md").write_text(SARAH_PROMPT + "\n")
    (home / "config.toml").write_text(
        "[assistants.sarah]\n"
        'prompt_file = "sarah.md"\n'
        'model = "anthropic:claude-haiku-5-5"\n'
        'description = "customer service"\n'
        "[assistants.marcus]\n"
        'description = "growth"\n'
    )
    monkeypatch.setenv("RHEO_NOW", T0.isoformat())
    return home


def injected_text(request) -> str:
    """The user message of a request (not its system prompt)."""
    return "".join(b["text"] for b in request.messages[0]["content"] if b.get("type") == "text")


def add(rheo, text_, topic, *extra):
    result = rheo("memory", "add", text_, "--topic", topic, *extra)
    assert result.exit_code == 0, result.stderr
    return result


def listed(rheo, *args):
    result = rheo("memory", "list", "--json", *args)
    assert result.exit_code == 0, result.stderr
    return [m["content"]["label"] for m in json.loads(result.stdout)]


def test_the_assistants_prompt_and_model_are_used_and_its_turns_marked(rheo, team, fake_model):
    fake_model.add("Hello, Sarah here.", "Hello from rheo.")
    assert rheo("ask", "--assistant", "sarah", "Hi Sarah").exit_code == 0
    assert rheo("ask", "Hi rheo").exit_code == 0
    with_sarah, plain = fake_model.requests
    texts = [block.text for block in with_sarah.system]
    assert texts[1] == SARAH_PROMPT  # after rheo's own system prompt, before the clock
    assert texts[0] == [b.text for b in plain.system][0]
    assert with_sarah.system[1].cache and not with_sarah.system[0].cache
    assert all(SARAH_PROMPT not in b.text for b in plain.system)
    assert with_sarah.model == "claude-haiku-5-5" and plain.model == "claude-sonnet-5-5"
    # write_memory may say a scope only in an assistant's chat.
    spec = {t.name: t for t in with_sarah.tools}["write_memory"]
    assert "scope" in spec.input_schema["properties"]
    assert (
        "scope" not in {t.name: t for t in plain.tools}["write_memory"].input_schema["properties"]
    )
    metas = [json.loads(r["meta"]) for r in db_rows(team, "SELECT meta FROM turns ORDER BY id")]
    assert [m.get("assistant") for m in metas] == ["sarah", "sarah", None, None]


def test_rheo_assistant_chooses_the_assistant_and_model_flag_still_wins(
    rheo, team, fake_model, monkeypatch
):
    monkeypatch.setenv("RHEO_ASSISTANT", "sarah")
    assert rheo("ask", "Hi").exit_code == 0
    assert rheo("ask", "-m", "claude-opus-5", "Hi again").exit_code == 0
    first, second = fake_model.requests
    assert first.model == "claude-haiku-5-5" and second.model == "claude-opus-5"
    assert SARAH_PROMPT in [b.text for b in second.system]


@pytest.mark.parametrize(
    "args",
    [
        ("ask", "--assistant", "nobody", "Hi"),
        ("--assistant", "nobody", "ask", "Hi"),
        ("context", "--assistant", "nobody", "Hi"),
        ("memory", "list", "--assistant", "nobody"),
        ("memory", "add", "x", "--topic", "t", "--assistant", "nobody"),
    ],
)
def test_an_unknown_assistant_is_a_usage_error_and_nothing_is_stored(rheo, team, fake_model, args):
    result = rheo(*args)
    assert result.exit_code == 2
    assert "unknown assistant 'nobody'; configured: marcus, sarah" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert fake_model.requests == []
    if (team / "rheo.db").exists():
        assert db_rows(team, "SELECT count(*) AS n FROM turns")[0]["n"] == 0
        assert db_rows(team, "SELECT count(*) AS n FROM memory_items")[0]["n"] == 0


def test_an_unknown_assistant_from_the_environment_without_any_configured(
    rheo, home, fake_model, monkeypatch
):
    monkeypatch.setenv("RHEO_ASSISTANT", "sarah")
    result = rheo("ask", "Hi")
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("rheo: RHEO_ASSISTANT: unknown assistant 'sarah'")
    assert "none is configured" in result.stderr and fake_model.requests == []


def test_a_missing_prompt_file_is_one_line_and_nothing_is_stored(rheo, team, fake_model):
    (team / "sarah.md").unlink()
    result = rheo("ask", "--assistant", "sarah", "Hi")
    assert result.exit_code == 1 and "sarah.md" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and fake_model.requests == []


def test_a_bad_assistants_table_is_a_config_error(rheo, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[assistants.sarah]\nprompt = "x.md"\n')
    result = rheo("memory", "list")
    assert result.exit_code == 1 and "unknown setting [assistants.sarah] 'prompt'" in result.stderr
    (home / "config.toml").write_text('[assistants."Sarah Smith"]\nmodel = "x"\n')
    result = rheo("memory", "list")
    assert result.exit_code == 1 and "invalid assistant name" in result.stderr


def test_memory_list_shows_what_each_assistant_sees(rheo, team):
    add(rheo, "Company has 5 employees", "company size")
    add(rheo, "Prefers SMS for follow-ups", "follow-ups")
    add(rheo, "Prefers email over SMS for follow-ups", "follow-ups", "--assistant", "sarah")
    add(rheo, "Wants weekly growth numbers", "growth numbers", "-a", "marcus")
    assert set(listed(rheo)) == {"Company has 5 employees", "Prefers SMS for follow-ups"}
    assert set(listed(rheo, "--assistant", "sarah")) == {
        "Company has 5 employees",
        "Prefers email over SMS for follow-ups",
    }
    assert set(listed(rheo, "--assistant", "marcus")) == {
        "Company has 5 employees",
        "Prefers SMS for follow-ups",
        "Wants weekly growth numbers",
    }
    every = rheo("memory", "list", "--all-assistants", COLUMNS="200")
    header, *lines = every.stdout.splitlines()
    assert header.split()[:3] == ["id", "assistant", "category"]
    rows = [(line.split()[1], line) for line in lines]
    assert len(rows) == 4
    for whose, label in [
        ("sarah", "Prefers email over SMS for follow-ups"),
        ("shared", "Prefers SMS for follow-ups"),
        ("shared", "Company has 5 employees"),
        ("marcus", "Wants weekly growth numbers"),
    ]:
        assert any(w == whose and label in line for w, line in rows), (whose, label)
    both = rheo("memory", "list", "--assistant", "sarah", "--all-assistants")
    assert both.exit_code == 2 and "not both" in both.stderr
    found = json.loads(rheo("memory", "search", "follow-ups", "--json", "-a", "sarah").stdout)
    assert [(m["content"]["label"], m["assistant"]) for m in found] == [
        ("Prefers email over SMS for follow-ups", "sarah")
    ]


def test_context_preview_for_an_assistant(rheo, team):
    add(rheo, "Company has 5 employees", "company size")
    add(rheo, "Prefers SMS for follow-ups", "follow-ups")
    add(rheo, "Prefers email over SMS for follow-ups", "follow-ups", "--assistant", "sarah")
    sarah = json.loads(rheo("context", "--assistant", "sarah", "--json", "follow-ups?").stdout)
    marcus = json.loads(rheo("context", "--assistant", "marcus", "--json", "follow-ups?").stdout)
    memory = {
        who: next(s["text"] for s in info["sections"] if s["name"] == "CURRENT MEMORY")
        for who, info in (("sarah", sarah), ("marcus", marcus))
    }
    assert "Prefers email over SMS" in memory["sarah"]
    assert "Prefers SMS for follow-ups" not in memory["sarah"]
    assert "Prefers SMS for follow-ups" in memory["marcus"] and "email" not in memory["marcus"]
    assert all("Company has 5 employees" in m for m in memory.values())
    assert sarah["assistant"] == "sarah" and sarah["model"] == "claude-haiku-5-5"
    assert [b["text"] for b in sarah["system"]][1] == SARAH_PROMPT
    shown = rheo("context", "-a", "sarah", "follow-ups?").stdout
    assert SARAH_PROMPT in shown and "Prefers email over SMS" in shown


def test_the_extractor_marks_facts_shared_or_for_the_assistant(rheo, fake_model, team):
    route(
        fake_model,
        chat="Noted, I'll email them.",
        extract=facts(
            {
                "relation": "new",
                "category": "operations",
                "topic": "company size",
                "label": "Company has 5 employees",
                "confidence": 0.9,
                "scope": "shared",
            },
            {
                "relation": "new",
                "category": "preference",
                "topic": "follow-ups",
                "label": "Prefers email over SMS for follow-ups",
                "confidence": 0.9,
                "scope": "assistant",
                "assistant": "marcus",  # a model naming an assistant is not obeyed
            },
        ),
    )
    said = "We're 5 people now. Sarah, please send follow-ups by email, not SMS."
    assert rheo("ask", "--assistant", "sarah", said).exit_code == 0
    assert rheo("maintain").exit_code == 0
    extract = next(r for r in fake_model.requests if kind_of(r) == "extract")
    assert "Conversation with the assistant: sarah (customer service)" in injected_text(extract)
    tool = extract.tools[0]
    scope = tool.input_schema["properties"]["facts"]["items"]["properties"]["scope"]
    assert scope["enum"] == ["shared", "assistant"]
    rows = db_rows(team, "SELECT label, assistant FROM memory_items ORDER BY id")
    assert [(r["label"], r["assistant"]) for r in rows] == [
        ("Company has 5 employees", None),
        ("Prefers email over SMS for follow-ups", "sarah"),
    ]
    assert set(listed(rheo, "-a", "marcus")) == {"Company has 5 employees"}


def test_without_an_assistant_every_extracted_fact_is_shared(rheo, fake_model, team):
    route(
        fake_model,
        extract=facts(
            {
                "category": "preference",
                "topic": "tea",
                "label": "Likes green tea",
                "scope": "assistant",
            }
        ),
    )
    assert rheo("ask", "I like green tea").exit_code == 0
    assert rheo("maintain").exit_code == 0
    extract = next(r for r in fake_model.requests if kind_of(r) == "extract")
    assert "Conversation with the assistant:" not in injected_text(extract)
    rows = db_rows(team, "SELECT label, assistant FROM memory_items")
    assert [(r["label"], r["assistant"]) for r in rows] == [("Likes green tea", None)]


def test_write_memory_scope_comes_from_the_chats_assistant(rheo, team, fake_model):
    fake_model.add(
        Canned(
            tool_calls=[
                (
                    "write_memory",
                    {
                        "category": "preference",
                        "topic": "follow-ups",
                        "label": "Prefers email for follow-ups",
                        "scope": "assistant",
                    },
                ),
                (
                    "write_memory",
                    {
                        "category": "operations",
                        "topic": "company size",
                        "label": "Company has 5 employees",
                    },
                ),
            ]
        ),
        "Noted both.",
    )
    assert rheo("ask", "-a", "sarah", "Email my follow-ups; we are 5 people.").exit_code == 0
    rows = db_rows(team, "SELECT label, assistant, source FROM memory_items ORDER BY id")
    assert [(r["label"], r["assistant"], r["source"]) for r in rows] == [
        ("Prefers email for follow-ups", "sarah", "tool"),
        ("Company has 5 employees", None, "tool"),
    ]
