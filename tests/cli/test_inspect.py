"""Inspection commands: history, sessions, context, with --json shapes."""

from __future__ import annotations

import json


def seed(rheo, fake_model, monkeypatch):
    monkeypatch.setenv("RHEO_NOW", "2026-04-01T09:00:00+00:00")
    fake_model.add("Tomatoes like sun.", "Water them daily.")
    rheo("ask", "How do I grow tomatoes?")
    monkeypatch.setenv("RHEO_NOW", "2026-04-01T09:05:00+00:00")
    rheo("ask", "And watering?")


def test_history_recent_and_search_json(rheo, fake_model, monkeypatch):
    seed(rheo, fake_model, monkeypatch)
    recent = json.loads(rheo("history", "recent", "--json").stdout)
    assert [t["role"] for t in recent] == ["user", "assistant", "user", "assistant"]
    for turn in recent:
        assert {"id", "role", "content", "ts", "session_id"} <= set(turn)
    assert recent[0]["ts"] == "2026-04-01T09:00:00.000Z"
    assert json.loads(rheo("history", "recent", "-n", "1", "--json").stdout)[0]["content"] == (
        "Water them daily."
    )
    found = json.loads(rheo("history", "search", "tomato", "--json").stdout)
    assert [t["id"] for t in found][:2] and all("omato" in t["content"] for t in found)
    assert "score" in found[0]


def test_history_text_output(rheo, fake_model, monkeypatch):
    seed(rheo, fake_model, monkeypatch)
    header, *out = rheo("history", "recent").stdout.splitlines()
    assert header.split() == ["id", "when", "session", "role", "text"]
    assert out[0].startswith("#1") and "2026-04-01 09:00" in out[0]
    assert "How do I grow tomatoes?" in out[0]
    assert rheo("history", "search", "C++ (").stdout.strip() == "(no turns)"


def test_sessions_list_json(rheo, fake_model, monkeypatch):
    seed(rheo, fake_model, monkeypatch)
    sessions = json.loads(rheo("sessions", "list", "--json").stdout)
    assert sessions == [
        {
            "id": 1,
            "number": 1,
            "profile": "default",
            "started_at": "2026-04-01T09:00:00.000Z",
            "last_turn_at": "2026-04-01T09:05:00.000Z",
            "turns": 4,
        }
    ]


def test_context_json_shows_sections_and_messages_without_a_model_call(
    rheo, fake_model, monkeypatch
):
    seed(rheo, fake_model, monkeypatch)
    calls = len(fake_model.requests)
    out = json.loads(rheo("context", "--json", "what", "next?").stdout)
    assert len(fake_model.requests) == calls  # no model call
    assert [s["name"] for s in out["sections"]] == ["CURRENT SESSION"]
    section = out["sections"][0]
    assert set(section) >= {"name", "text", "tokens"}
    assert section["tokens"] > 0 and "Water them daily." in section["text"]
    assert out["messages"][0]["role"] == "user"
    assert out["messages"][0]["content"][-1]["text"].endswith("---\nwhat next?")
    assert out["system"][0]["text"].startswith("You are rheo")
    assert out["context_tokens"] <= out["budget"] == 2000
    # the request is exactly what ask would send next
    fake_model.add("ok")
    rheo("ask", "what", "next?")
    assert fake_model.last.messages == out["messages"]


def test_context_text_output_lists_tokens_per_section(rheo, fake_model, monkeypatch):
    seed(rheo, fake_model, monkeypatch)
    out = rheo("context", "hello").stdout
    assert "=== CURRENT SESSION ===" in out
    assert "CURRENT SESSION" in out.split("tokens (estimated)")[1]
    assert "context total" in out


def test_context_explain_shows_its_table_first_and_the_prompt_only_with_system(
    rheo, fake_model, monkeypatch
):
    seed(rheo, fake_model, monkeypatch)
    out = rheo("context", "--explain", "hello").stdout
    assert out.startswith("──── tokens (estimated) ────")
    assert "turn:1" in out and "context total" in out
    assert "──── system ────" not in out and "=== CURRENT SESSION ===" not in out
    both = rheo("context", "--explain", "--system", "hello").stdout
    assert both.startswith("──── tokens (estimated) ────")
    assert both.index("context total") < both.index("──── system ────")
    assert "=== CURRENT SESSION ===" in both


def test_context_budget_option(rheo, fake_model, monkeypatch):
    seed(rheo, fake_model, monkeypatch)
    out = json.loads(rheo("context", "--json", "--budget", "30", "x").stdout)
    assert out["context_tokens"] <= 30


def test_a_group_alone_lists_as_memory_does(rheo, fake_model):
    """``rheo sessions``, ``digests``, ``jobs`` alone list them; ``rheo history`` alone shows
    the most recent turns — as ``memory``, ``items`` and ``kb`` alone list theirs."""
    fake_model.add("Hello there.")
    assert rheo("ask", "hello").exit_code == 0
    for group, same in (("sessions", "list"), ("digests", "list"), ("jobs", "list"),
                        ("history", "recent")):  # fmt: skip
        alone, named = rheo(group, "--json"), rheo(group, same, "--json")
        assert alone.exit_code == 0 and alone.stdout == named.stdout, group
    assert "Hello there." in rheo("history").stdout
    assert "search" in rheo("history", "--help").stdout


def test_every_command_has_help_text(rheo):
    import typer.main

    from rheo_cli.cli.main import app

    root = typer.main.get_command(app)
    stack = [root]
    while stack:
        cmd = stack.pop()
        assert (cmd.help or "").strip(), cmd.name
        stack.extend(getattr(cmd, "commands", {}).values())


def test_paths_work_when_the_config_is_broken(rheo, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("model = [")
    result = rheo("paths", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["config"].endswith("config.toml")


def test_global_new_flag_applies_to_ask(rheo, fake_model, home):
    rheo("ask", "one")
    out = json.loads(rheo("--new", "ask", "--json", "two").stdout)
    assert out["session_id"] == 2


def test_piped_stdin_to_bare_rheo_asks(rheo, fake_model, home):
    result = rheo(input="a piped question\n")
    assert result.exit_code == 0 and result.stdout == "ok\n"
    assert fake_model.last.messages[0]["content"][-1]["text"] == "a piped question"


def test_chat_without_a_terminal_is_a_usage_error(rheo, fake_model):
    result = rheo("chat", input="hello\n")
    assert result.exit_code == 2 and "needs a terminal" in result.stderr


def test_empty_profile_name_is_refused(rheo):
    result = rheo("--profile", "", "history", "recent")
    assert result.exit_code == 2 and "invalid profile name" in result.stderr


def test_memory_and_items_alone_list_like_the_repl(rheo, home):
    added = rheo("memory", "add", "Ana prefers tea", "--topic", "ana.drink")
    assert added.exit_code == 0, added.stderr
    alone = rheo("memory")
    assert alone.exit_code == 0 and "Ana prefers tea" in alone.stdout
    assert rheo("items").exit_code == 0


def test_ask_json_gives_the_session_number_sessions_show_takes(rheo, home, fake_model):
    import json

    rheo("-p", "work", "ask", "first profile turn")
    out = json.loads(rheo("ask", "--json", "hello").stdout)
    assert out["session_number"] == 1
    shown = rheo("sessions", "show", str(out["session_number"]))
    assert shown.exit_code == 0 and "hello" in shown.stdout
