"""Claude Code headless end to end: rheo runs a stand-in ``claude`` (tests/bin/claude) that
prints what the real ``claude -p --output-format stream-json --verbose`` prints."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from helpers import db_rows

BIN = Path(__file__).resolve().parent.parent / "bin"
TOOLS = [
    "write_memory",
    "memory_search",
    "memory_list",
    "memory_forget",
    "chat_search",
    "chat_recent",
    "context",
]
"""The tools ``rheo mcp`` offers, in its order."""


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


@pytest.mark.boundary
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
    # no settings of the person's (hooks, plugins, CLAUDE.md), no transcript, no skills
    assert argv[argv.index("--setting-sources") + 1] == ""
    assert "--no-session-persistence" in argv and "--disable-slash-commands" in argv
    assert Path(argv[argv.index("--mcp-config") + 1]).name == "rheo-mcp.json"
    assert argv[argv.index("--allowedTools") + 1] == "mcp__rheo"  # every tool it offers
    assert "--model" not in argv  # Claude Code's own default
    assert "--system-prompt" not in argv  # a file: any size, not on the command line
    prompt_file = Path(argv[argv.index("--system-prompt-file") + 1])
    assert "Current date and time" in run["system"]
    assert "What should I cook tonight?" in run["stdin"]  # the message goes on stdin
    assert run["env"]["CLAUDE_CODE_DISABLE_AUTO_MEMORY"] == "1"
    assert run["env"]["MCP_CONNECTION_NONBLOCKING"] == "false"
    assert run["env"]["CLAUDE_CODE_MAX_RETRIES"] == "2"
    assert run["env"]["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"] == "1"
    # a private, empty working folder under rheo's home, never the person's folder
    work = Path(run["cwd"])
    assert work == home / "claude-code" and prompt_file.parent == work
    assert stat.S_IMODE(work.stat().st_mode) == 0o700
    # nothing of the person's there: only the configuration naming rheo's memory server
    # (the prompt file is removed after the call)
    assert [f.name for f in work.iterdir()] == ["rheo-mcp.json"]
    # the stand-in connected rheo's server as Claude Code does, and saw every tool
    assert run["mcp"] == [{"name": "rheo", "status": "connected", "tools": TOOLS}]


@pytest.mark.boundary
def test_model_and_mcp_config_are_passed(rheo, claude, home, tmp_path):
    own = tmp_path / "my-mcp.json"
    own.write_text('{"mcpServers": {}}')
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(f'[claude_code]\nmcp_config = "{own}"\n')
    assert rheo("ask", "-m", "claude-code:opus", "q").exit_code == 0
    argv = runs(claude)[0]["argv"]
    assert argv[argv.index("--model") + 1] == "opus"
    assert argv[argv.index("--mcp-config") + 1] == str(own)
    assert "--allowedTools" not in argv  # the person's own servers: their own permissions


@pytest.mark.boundary
def test_logged_out_is_one_line_and_no_error_text_becomes_the_reply(rheo, claude, home):
    result = rheo("ask", "q", FAKE_CLAUDE="logged_out")
    one_line_failure(result, "Claude Code is not logged in: run 'claude' and /login")
    assert turns(home) == [("user", "q", None), ("assistant", "", "error")]


@pytest.mark.boundary
def test_a_refused_key_ends_at_claude_codes_first_retry(rheo, claude, home):
    """Claude Code retries a 401 ten times over minutes; rheo stops it at the first
    api_retry event and names the key, not /login."""
    result = rheo(
        "ask",
        "--provider",
        "claude-code",
        "q",
        FAKE_CLAUDE="api_error",
        FAKE_CLAUDE_STATUS="401",
        FAKE_CLAUDE_DELAY_MS="30000",
        ANTHROPIC_API_KEY="sk-ant-wrong",
    )
    one_line_failure(result, "Claude Code's API key was refused (401): check ANTHROPIC_API_KEY")
    assert "/login" not in result.stderr
    assert turns(home) == [("user", "q", None), ("assistant", "", "error")]
    subscription = rheo(
        "ask", "q2", FAKE_CLAUDE="api_error", FAKE_CLAUDE_STATUS="401", FAKE_CLAUDE_DELAY_MS="30000"
    )
    one_line_failure(subscription, "Claude Code is not logged in: run 'claude' and /login")


@pytest.mark.boundary
def test_rate_limits_are_classed_and_long_retries_noted(rheo, claude, home):
    result = rheo(
        "ask", "q", FAKE_CLAUDE="api_error", FAKE_CLAUDE_STATUS="429", FAKE_CLAUDE_DELAY_MS="2000"
    )
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    # two retries (rheo's policy, CLAUDE_CODE_MAX_RETRIES=2), each a notice, then the failure
    assert lines[:2] == [
        "rheo: note: Claude Code: rate or usage limit (429); retrying in 2 s (1 of 2)",
        "rheo: note: Claude Code: rate or usage limit (429); retrying in 2 s (2 of 2)",
    ]
    assert lines[2].startswith("rheo: Claude Code hit a rate or usage limit (429)")
    assert len(lines) == 3
    meta = json.loads(db_rows(home, "SELECT meta FROM turns WHERE role='assistant'")[0][0])
    assert meta["error"]["kind"] == "rate_limit"


@pytest.mark.boundary
def test_usage_prints_the_cost_that_is_stored(rheo, claude, home):
    result = rheo("ask", "-u", "--provider", "claude-code", "q")
    assert result.exit_code == 0, result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        "rheo: tokens: 4 in (12,000 read from cache, 1,500 written to it), 9 out; cost $0.0123"
    )
    meta = json.loads(db_rows(home, "SELECT meta FROM turns WHERE role='assistant'")[0][0])
    assert meta["cost_usd"] == 0.0123


@pytest.mark.boundary
def test_a_long_assistant_prompt_goes_in_a_file(rheo, claude, home):
    home.mkdir(parents=True, exist_ok=True)
    long_prompt = "You are Sarah. " + "Be kind. " * 17_000  # 153 KB, over one argument's limit
    (home / "sarah.md").write_text(long_prompt)
    (home / "config.toml").write_text('[assistants.sarah]\nprompt_file = "sarah.md"\n')
    result = rheo("ask", "-a", "sarah", "--provider", "claude-code", "hi")
    assert result.exit_code == 0, result.stderr
    assert long_prompt.rstrip() in runs(claude)[0]["system"]


@pytest.mark.boundary
@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"You are Sarah.\x00 Be kind.", "holds a NUL byte"),
        (b"You are \xff Sarah.", "is not UTF-8 text"),
        (None, "Is a directory"),  # unreadable, even for root
    ],
)
def test_a_bad_prompt_file_is_one_line_before_anything_is_stored(rheo, claude, home, content, said):
    home.mkdir(parents=True, exist_ok=True)
    prompt = home / "sarah.md"
    if content is None:
        prompt.mkdir()
    else:
        prompt.write_bytes(content)
    (home / "config.toml").write_text('[assistants.sarah]\nprompt_file = "sarah.md"\n')
    result = rheo("ask", "-a", "sarah", "--provider", "claude-code", "hi")
    one_line_failure(result, said)
    assert not claude.exists()  # Claude Code never ran
    assert not (home / "rheo.db").exists() or turns(home) == []


@pytest.mark.boundary
def test_the_memory_tools_work_through_the_stand_in(rheo, claude, home):
    call = {
        "name": "mcp__rheo__write_memory",
        "input": {"category": "preference", "topic": "tea", "label": "Likes green tea"},
    }
    result = rheo(
        "ask", "--provider", "claude-code", "I like green tea", FAKE_CLAUDE_CALL=json.dumps(call)
    )
    assert result.exit_code == 0, result.stderr
    assert runs(claude)[0]["call"] == "stored memory #1"
    listed = json.loads(rheo("memory", "list", "--json").stdout)
    assert [i["content"]["label"] for i in listed] == ["Likes green tea"]


@pytest.mark.boundary
def test_an_incognito_turn_gets_no_memory_server(rheo, claude, home):
    """--incognito offers Claude Code no MCP server (as the Anthropic API gets no tools): a
    write_memory the model asks for cannot store what was said."""
    call = {
        "name": "mcp__rheo__write_memory",
        "input": {"category": "fact", "topic": "pin", "label": "The PIN is 4417"},
    }
    result = rheo(
        "ask",
        "--incognito",
        "--provider",
        "claude-code",
        "my PIN is 4417",
        FAKE_CLAUDE_CALL=json.dumps(call),
    )
    assert result.exit_code == 0, result.stderr
    run = runs(claude)[0]
    assert "--mcp-config" not in run["argv"] and "--allowedTools" not in run["argv"]
    assert run["mcp"] == [] and run["call"] is None
    assert "4417" in run["stdin"]  # the call was made
    assert json.loads(rheo("memory", "list", "--json").stdout) == []
    assert not (home / "rheo.db").exists() or turns(home) == []
    # the same with the person's own MCP file: it stays out too
    own = home / "own-mcp.json"
    own.write_text('{"mcpServers": {}}')
    (home / "config.toml").write_text(f'[claude_code]\nmcp_config = "{own}"\n')
    assert rheo("ask", "--incognito", "--provider", "claude-code", "x").exit_code == 0
    assert "--mcp-config" not in runs(claude)[1]["argv"]
    assert rheo("ask", "--provider", "claude-code", "x").exit_code == 0
    argv = runs(claude)[2]["argv"]
    assert argv[argv.index("--mcp-config") + 1] == str(own)


@pytest.mark.boundary
def test_nonzero_exit(rheo, claude, home):
    result = rheo("ask", "--provider", "claude-code", "q", FAKE_CLAUDE="exit")
    one_line_failure(result, "exited with status 3: Error: something went wrong inside claude")
    assert turns(home)[0] == ("user", "q", None)


@pytest.mark.boundary
def test_error_result(rheo, claude, home):
    one_line_failure(rheo("ask", "q", FAKE_CLAUDE="error_result"), "Claude Code failed")


@pytest.mark.boundary
def test_malformed_output_keeps_the_partial_reply(rheo, claude, home):
    result = rheo("ask", "q", FAKE_CLAUDE="malformed", FAKE_CLAUDE_REPLY="Hello there friend")
    one_line_failure(result, "not stream-json")
    assert turns(home)[1] == ("assistant", "Hello ", "error")


@pytest.mark.boundary
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


@pytest.mark.boundary
def test_extraction_runs_on_claude_code_with_haiku(rheo, claude, home):
    facts = json.dumps({"facts": [{"topic": "pet", "label": "Has a cat named Miso"}]})
    assert rheo("ask", "My cat Miso is asleep.", FAKE_CLAUDE_REPLY="Sweet.").exit_code == 0
    out = json.loads(rheo("maintain", "--json", FAKE_CLAUDE_REPLY=facts).stdout)
    assert any(n.startswith("claude-code:") for n in out["done"][0]["notes"]), out
    run = runs(claude)[-1]
    argv = run["argv"]
    assert argv[argv.index("--model") + 1] == "haiku"
    assert run["system"].startswith("You extract durable facts")
    # extraction gets no MCP server and no tools: it must not write memory itself
    assert "--mcp-config" not in argv and "--allowedTools" not in argv
    assert run["mcp"] == []
    listed = json.loads(rheo("memory", "list", "--json").stdout)
    assert listed[0]["content"]["label"] == "Has a cat named Miso"


@pytest.mark.boundary
def test_digests_too_run_on_claude_code_with_no_mcp_server(rheo, claude, home):
    """A closed session's digest, like an extraction, gets no MCP server and no tools: only
    rheo's rules write memory from it."""
    assert rheo("ask", "My cat Miso is asleep.", FAKE_CLAUDE_REPLY="Sweet.").exit_code == 0
    assert rheo("ask", "--new", "Something else.").exit_code == 0  # closes the first session
    digest = json.dumps({"narrative": "Talked about Miso the cat.", "facts": []})
    done = rheo("maintain", "--json", FAKE_CLAUDE_REPLY=digest)
    assert done.exit_code == 0, done.stderr
    background = runs(claude)[2:]
    kinds = sorted(r["system"].split()[1] for r in background)
    assert kinds == ["extract", "extract", "summarise"]  # two extractions and one digest
    for run in background:
        assert "--mcp-config" not in run["argv"] and "--allowedTools" not in run["argv"]
        assert run["mcp"] == []
    assert json.loads(rheo("digests", "list", "--json").stdout)


@pytest.mark.boundary
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
    assert argv[argv.index("--allowedTools") + 1] == "mcp__rheo"
    server = json.loads(config_path.read_text())["mcpServers"]["rheo"]
    assert server["alwaysLoad"] is True  # its tools are there on the first request
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
    assert names == TOOLS


@pytest.mark.boundary
@pytest.mark.parametrize(
    ("status", "said"),
    [
        ("529", "the API is overloaded (529) (through Claude Code)"),
        ("500", "the API failed (500) (through Claude Code)"),
    ],
)
def test_overload_and_server_errors_after_claude_codes_retries(rheo, claude, home, status, said):
    result = rheo("ask", "q", FAKE_CLAUDE="api_error", FAKE_CLAUDE_STATUS=status)
    one_line_failure(result, said)
