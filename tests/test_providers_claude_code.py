"""Claude Code headless end to end: rheo runs a stand-in ``claude`` (tests/bin/claude) that
prints what the real ``claude -p --output-format stream-json --verbose`` prints."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from helpers import db_rows

BIN = Path(__file__).resolve().parent / "bin"


@pytest.fixture
def claude(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The stand-in on PATH; returns the file where it logs each run (argv, cwd, stdin)."""
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    log = tmp_path / "claude-runs.jsonl"
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(log))
    return log


def runs(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def turns(home):
    return [
        (r["role"], r["content"], r["status"])
        for r in db_rows(home, "SELECT role, content, status FROM turns ORDER BY id")
    ]


def one_line_failure(result, pattern):
    assert result.exit_code == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and pattern in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_auto_picks_claude_on_path_streams_and_records_usage_and_cost(rheo, claude, home):
    result = rheo(
        "ask", "--json", "What should I cook tonight?", FAKE_CLAUDE_REPLY="Try a risotto."
    )
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["reply"] == "Try a risotto."  # streamed deltas, not doubled by the whole message
    assert out["model"] == "claude-sonnet-4-5-20250929"  # from the init event
    assert out["usage"] == {
        "input_tokens": 4,
        "output_tokens": 9,
        "cache_read_tokens": 12000,
        "cache_write_tokens": 1500,
    }
    meta = json.loads(db_rows(home, "SELECT meta FROM turns WHERE role='assistant'")[0][0])
    assert meta["cost_usd"] == 0.0123
    run = runs(claude)[0]
    argv = run["argv"]
    assert argv[:5] == [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
    ]
    assert argv[argv.index("--tools") + 1] == ""  # every built-in tool off
    # the person's own MCP servers stay out; only rheo's memory server is offered
    assert "--strict-mcp-config" in argv
    assert Path(argv[argv.index("--mcp-config") + 1]).name == "rheo-mcp.json"
    assert "--model" not in argv  # Claude Code's own default
    system = argv[argv.index("--system-prompt") + 1]
    assert "Current date and time" in system
    assert "What should I cook tonight?" in run["stdin"]  # the message goes on stdin
    # a private, empty working folder under rheo's home, never the person's folder
    work = Path(run["cwd"])
    assert work == home / "claude-code"
    assert stat.S_IMODE(work.stat().st_mode) == 0o700
    # nothing of the person's there: only the configuration naming rheo's memory server
    assert [f.name for f in work.iterdir()] == ["rheo-mcp.json"]


def test_model_and_mcp_config_are_passed(rheo, claude, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[claude_code]\nmcp_config = "/tmp/rheo-mcp.json"\n')
    assert rheo("ask", "-m", "claude-code:opus", "q").exit_code == 0
    argv = runs(claude)[0]["argv"]
    assert argv[argv.index("--model") + 1] == "opus"
    assert argv[argv.index("--mcp-config") + 1] == "/tmp/rheo-mcp.json"


def test_logged_out_is_one_line_and_no_error_text_becomes_the_reply(rheo, claude, home):
    result = rheo("ask", "q", FAKE_CLAUDE="logged_out")
    one_line_failure(result, "Claude Code is not logged in: run 'claude' and /login")
    assert turns(home) == [("user", "q", None), ("assistant", "", "error")]


def test_nonzero_exit(rheo, claude, home):
    result = rheo("ask", "--provider", "claude-code", "q", FAKE_CLAUDE="exit")
    one_line_failure(result, "exited with status 3: Error: something went wrong inside claude")
    assert turns(home)[0] == ("user", "q", None)


def test_error_result(rheo, claude, home):
    one_line_failure(rheo("ask", "q", FAKE_CLAUDE="error_result"), "Claude Code failed")


def test_malformed_output_keeps_the_partial_reply(rheo, claude, home):
    result = rheo("ask", "q", FAKE_CLAUDE="malformed", FAKE_CLAUDE_REPLY="Hello there friend")
    one_line_failure(result, "not stream-json")
    assert turns(home)[1] == ("assistant", "Hello ", "error")


def test_slow_claude_times_out_and_is_stopped(rheo, claude, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("timeout = 1\n")
    result = rheo("ask", "q", FAKE_CLAUDE="slow", FAKE_CLAUDE_SLOW="20")
    one_line_failure(result, "gave no output for 1 s")
    assert turns(home) == [("user", "q", None), ("assistant", "", "error")]


def test_missing_binary_when_chosen(rheo, home, monkeypatch):
    monkeypatch.setenv("RHEO_PROVIDER", "claude-code")
    result = rheo("ask", "q")
    one_line_failure(result, "'claude' command (Claude Code) is not on PATH")
    assert turns(home)[0] == ("user", "q", None)


def test_extraction_runs_on_claude_code_with_haiku(rheo, claude, home):
    facts = json.dumps({"facts": [{"topic": "pet", "label": "Has a cat named Miso"}]})
    assert rheo("ask", "My cat Miso is asleep.", FAKE_CLAUDE_REPLY="Sweet.").exit_code == 0
    out = json.loads(rheo("maintain", "--json", FAKE_CLAUDE_REPLY=facts).stdout)
    assert any(n.startswith("claude-code:") for n in out["done"][0]["notes"]), out
    argv = runs(claude)[-1]["argv"]
    assert argv[argv.index("--model") + 1] == "haiku"
    assert argv[argv.index("--system-prompt") + 1].startswith("You extract durable facts")
    listed = json.loads(rheo("memory", "list", "--json").stdout)
    assert listed[0]["content"]["label"] == "Has a cat named Miso"


def test_rheos_memory_server_is_offered_to_claude_code(rheo, claude, home):
    """Without a config of the person's own, Claude Code gets rheo's MCP server for this
    profile, its memory tools pre-approved; the configured command really serves them."""
    import anyio
    import netguard
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    assert rheo("ask", "--provider", "claude-code", "--profile", "work", "q").exit_code == 0
    argv = runs(claude)[0]["argv"]
    config_path = Path(argv[argv.index("--mcp-config") + 1])
    assert config_path.parent == home / "claude-code"
    assert config_path.stat().st_mode & 0o777 == 0o600
    allowed = argv[argv.index("--allowedTools") + 1].split(",")
    assert "mcp__rheo__write_memory" in allowed
    server = json.loads(config_path.read_text())["mcpServers"]["rheo"]
    assert server["args"][-4:] == ["rheo_cli", "mcp", "--profile", "work"]
    assert server["env"]["RHEO_HOME"] == str(home)

    params = StdioServerParameters(
        command=server["command"],
        args=server["args"],
        env=netguard.subprocess_env({**server["env"], "RHEO_WORKER": "off"}),
    )
    names: list[str] = []

    async def main() -> None:
        with anyio.fail_after(60):
            async with (
                stdio_client(params) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                names.extend(t.name for t in (await session.list_tools()).tools)

    anyio.run(main)
    assert {"write_memory", "memory_search", "chat_search"} <= set(names)
