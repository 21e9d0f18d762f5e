"""rheo's claude-code provider and ``rheo mcp`` driven through the real Claude Code binary
against the fake Messages API."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakeapi import FakeAnthropic, error, text, tool_use
from helpers import REPO, db_rows, run_rheo

from realclients.clients import claude_env, events

pytestmark = pytest.mark.realclients

TOOLS = {
    f"mcp__rheo__{name}"
    for name in (
        "write_memory",
        "memory_search",
        "memory_list",
        "memory_forget",
        "chat_search",
        "chat_recent",
        "context",
    )
}


@pytest.fixture
def api() -> Any:
    with FakeAnthropic() as server:
        yield server


def tool_results(body: dict[str, Any]) -> list[str]:
    """The text of each tool_result of the request's last message (a string, or the text
    blocks of a list)."""
    out = []
    for block in body["messages"][-1]["content"]:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            content = block["content"]
            if isinstance(content, list):
                content = "".join(c.get("text", "") for c in content if c.get("type") == "text")
            out.append(content)
    return out


def transcripts(home: Path) -> list[Path]:
    return sorted((home / ".claude").rglob("*.jsonl"))


def test_ask_offers_every_memory_tool_and_they_all_run(api, claude_home, claude_bin, home, clients):
    """The first request carries rheo's injected context and all its tools; write_memory,
    context and memory_forget, called by the model, run (every tool is allowed) and a
    written fact lands in rheo's memory; no transcript is left."""
    env = claude_env(api, claude_home, home, claude_bin)
    added = run_rheo("memory", "add", "Ana prefers tea", "-t", "ana.drink", env=env)
    assert added.returncode == 0, added.stderr
    api.queue(
        tool_use(
            "mcp__rheo__write_memory",
            {"category": "preference", "topic": "coffee", "label": "Drinks oat flat whites"},
        ),
        tool_use("mcp__rheo__context", {"message": "what does Ana drink?"}),
        tool_use("mcp__rheo__memory_forget", {"id": 1}),
        text("Noted: oat flat whites."),
    )
    done = run_rheo(
        "ask", "--provider", "claude-code", "I drink oat flat whites now", env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == "Noted: oat flat whites."
    first, *rest = [r.body for r in api.message_requests]
    assert {t["name"] for t in first["tools"]} >= TOOLS
    system = json.dumps(first["system"])
    assert "Current date and time" in system  # rheo's system prompt
    user = json.dumps(first["messages"])
    assert "=== CURRENT MEMORY ===" in user and "Ana prefers tea" in user  # injected context
    assert "I drink oat flat whites now" in user
    wrote, ctx, forgot = (tool_results(body)[0] for body in rest)
    # plain text, not an output-schema wrapper ({"result": ...})
    assert wrote == "stored memory #2"
    assert "Current date and time" in ctx and "Ana prefers tea" in ctx
    assert forgot.startswith("forgotten #1")
    listed = json.loads(run_rheo("memory", "list", "--json", env=env).stdout)
    assert [(i["content"]["label"], i["source"]) for i in listed] == [
        ("Drinks oat flat whites", "mcp")
    ]
    # the extraction of that exchange runs through Claude Code with no MCP server at all
    api.requests.clear()
    api.default = text('{"facts": []}')
    maintained = run_rheo("maintain", "--json", env=env, timeout=120)
    assert maintained.returncode == 0, maintained.stderr
    extraction = [r.body for r in api.message_requests]
    assert extraction and json.dumps(extraction[0]["system"]).count("You extract durable facts")
    assert not [t["name"] for b in extraction for t in b.get("tools", []) if "rheo" in t["name"]]
    assert transcripts(claude_home) == []


def _person_with_hook(home: Path) -> Path:
    """The person's own Claude Code setup: a hook on every event that writes a file and
    their ~/.claude/CLAUDE.md, with a marker. Returns the hook's file."""
    ran = home / "hook-ran"
    hook = {"type": "command", "command": f"echo ran >> {ran}"}
    events_ = ("SessionStart", "UserPromptSubmit", "PreToolUse", "Stop", "SessionEnd")
    settings = {"hooks": {e: [{"hooks": [hook]}] for e in events_}}
    (home / ".claude" / "settings.json").write_text(json.dumps(settings))
    (home / ".claude" / "CLAUDE.md").write_text("MARKER-USER-CLAUDE-MD\n")
    return ran


def test_the_persons_hooks_claude_md_and_memory_stay_out_and_incognito_leaves_nothing(
    api, claude_home, claude_bin, home, clients
):
    env = claude_env(api, claude_home, home, claude_bin)
    ran = _person_with_hook(claude_home)
    work = home / "claude-code"  # where rheo runs Claude Code: its auto-memory folder
    work.mkdir(parents=True)
    (home.parent / "CLAUDE.md").write_text("MARKER-PARENT-CLAUDE-MD\n")  # above rheo's folder
    slug = "".join(c if c.isalnum() else "-" for c in str(work))
    memory = claude_home / ".claude" / "projects" / slug / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("MARKER-AUTO-MEMORY\n")
    # the control: the same setup reaches a plain `claude -p`
    plain = subprocess.run(
        [str(claude_bin / "claude"), "-p", "hello"],
        input=b"",
        env=env,
        cwd=work,
        capture_output=True,
        timeout=120,
    )
    assert plain.returncode == 0, plain.stderr
    assert ran.exists()
    control = json.dumps(api.message_requests[-1].body)
    for marker in ("MARKER-USER-CLAUDE-MD", "MARKER-PARENT-CLAUDE-MD", "MARKER-AUTO-MEMORY"):
        assert marker in control, marker
    ran.unlink()
    for path in transcripts(claude_home):
        path.unlink()
    api.requests.clear()

    secret = run_rheo(
        "ask", "--incognito", "--provider", "claude-code", "my secret PIN is 4417", env=env
    )
    assert secret.returncode == 0, secret.stderr
    normal = run_rheo("ask", "--provider", "claude-code", "what is new?", env=env)
    assert normal.returncode == 0, normal.stderr
    sent = json.dumps([r.body for r in api.message_requests])
    assert "4417" in sent  # the call was made...
    for marker in ("MARKER-USER-CLAUDE-MD", "MARKER-PARENT-CLAUDE-MD", "MARKER-AUTO-MEMORY"):
        assert marker not in sent, marker
    assert not ran.exists()  # ...with none of the person's hooks
    assert transcripts(claude_home) == []
    found = subprocess.run(
        ["grep", "-rl", "4417", str(claude_home), str(home)], capture_output=True, text=True
    )
    assert found.stdout == ""  # nowhere on disk: not in rheo, not in Claude Code's files
    stored = [r["content"] for r in db_rows(home, "SELECT content FROM turns")]
    assert stored == ["what is new?", "ok"]


def test_a_refused_key_ends_at_once_and_a_rate_limit_is_named(
    api, claude_home, claude_bin, home, clients
):
    env = claude_env(api, claude_home, home, claude_bin)
    api.queue(*[error(401, "authentication_error", "invalid x-api-key")] * 11)
    refused = run_rheo("ask", "--provider", "claude-code", "hello", env=env, timeout=120)
    assert refused.returncode == 1
    assert refused.stderr.decode() == (
        "rheo: Claude Code's API key was refused (401): check ANTHROPIC_API_KEY "
        "(the question is kept: 'rheo ask --retry' or /retry sends it again)\n"
    )
    assert len(api.message_requests) == 1  # stopped at Claude Code's first retry
    api.requests.clear()
    api.reset()
    limited = [error(429, "rate_limit_error", "slow down", headers={"retry-after": "2"})] * 3
    api.queue(*limited)
    slow = run_rheo("ask", "--provider", "claude-code", "hello again", env=env, timeout=120)
    assert slow.returncode == 1
    lines = slow.stderr.decode().splitlines()
    notice = "rheo: note: Claude Code: rate or usage limit (429); retrying in 2 s"
    assert lines[:2] == [f"{notice} (1 of 2)", f"{notice} (2 of 2)"]
    assert lines[2].startswith("rheo: Claude Code hit a rate or usage limit (429)")
    assert len(lines) == 3 and len(api.message_requests) == 3  # rheo's two retries
    meta = db_rows(home, "SELECT meta FROM turns WHERE status = 'error' ORDER BY id")
    assert [json.loads(m["meta"])["error"]["kind"] for m in meta] == ["auth", "rate_limit"]


def test_always_load_has_the_tools_on_the_first_request_from_a_slow_server(
    api, claude_home, claude_bin, home, clients, tmp_path
):
    """rheo's MCP entry says alwaysLoad: Claude Code waits for the server (2.1.197: up to
    about 7 s). Without it (the control, Claude Code 2.1.197, which sends its first request
    about 2 s after it starts) a slower server — rheo mcp on a loaded machine — offers
    nothing."""
    from rheo_cli.providers.claude_code import ClaudeCodeProvider
    from rheo_cli.providers.factory import MemoryServer

    env = claude_env(api, claude_home, home, claude_bin)
    env.pop("MCP_CONNECTION_NONBLOCKING", None)

    def slow(seconds: float) -> MemoryServer:
        command = f"sleep {seconds}; exec {sys.executable} -m rheo_cli mcp"
        return MemoryServer(argv=("/bin/sh", "-c", command), env=(("RHEO_HOME", str(home)),))

    provider = ClaudeCodeProvider(workdir=tmp_path / "work", memory_server=slow(2))
    config = provider._memory_config()
    assert json.loads(config.read_text())["mcpServers"]["rheo"]["alwaysLoad"] is True
    slower = ClaudeCodeProvider(workdir=tmp_path / "control", memory_server=slow(5))
    loose = tmp_path / "loose.json"
    entry = json.loads(slower._memory_config().read_text())
    del entry["mcpServers"]["rheo"]["alwaysLoad"]
    loose.write_text(json.dumps(entry))

    def offered(path: Path) -> tuple[list[Any], set[str]]:
        api.requests.clear()
        run = subprocess.run(
            [str(claude_bin / "claude"), "-p", "--output-format", "stream-json", "--verbose"]
            + ["--tools", "", "--strict-mcp-config", "--mcp-config", str(path)],
            input=b"hi",
            env=env,
            cwd=str(REPO),
            capture_output=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr
        init = next(e for e in events(run.stdout) if e.get("subtype") == "init")
        tools = {t["name"] for t in api.message_requests[0].body.get("tools", [])}
        return list(init["mcp_servers"]), tools

    servers, tools = offered(config)
    assert servers[0]["status"] == "connected" and tools >= TOOLS
    if clients.claude_version == "2.1.197":
        servers, tools = offered(loose)
        assert servers[0]["status"] == "pending" and not tools & TOOLS


def test_claude_mcp_add_json_makes_rheo_mcp_a_server_of_claude_p(
    api, claude_home, claude_bin, home, clients
):
    """The README's setup: ``claude mcp add-json -s user rheo`` with ``"alwaysLoad": true``
    (plain ``claude mcp add`` cannot say it, and Claude Code 2.1.197 then starts without
    rheo's tools whenever ``rheo mcp`` takes over about 2 s to list them), then ``claude -p``."""
    env = claude_env(api, claude_home, home, claude_bin)
    claude = str(claude_bin / "claude")
    entry = {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-m", "rheo_cli", "mcp"],
        "alwaysLoad": True,
    }
    add = subprocess.run(
        [claude, "mcp", "add-json", "-s", "user", "rheo", json.dumps(entry)],
        env=env,
        cwd=str(REPO),
        capture_output=True,
        timeout=60,
    )
    assert add.returncode == 0, add.stderr
    label = "Keeps the spare key under the blue pot"
    api.queue(
        tool_use(
            "mcp__rheo__write_memory", {"category": "fact", "topic": "spare key", "label": label}
        ),
        text("Stored."),
    )
    run = subprocess.run(
        [claude, "-p", "--output-format", "stream-json", "--verbose"]
        + ["--allowedTools", "mcp__rheo"],
        input=b"remember where the spare key is",
        env=env,
        cwd=str(REPO),
        capture_output=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    init = next(e for e in events(run.stdout) if e.get("subtype") == "init")
    assert {"name": "rheo", "status": "connected"}.items() <= init["mcp_servers"][0].items()
    assert set(init["tools"]) >= TOOLS
    assert tool_results(api.message_requests[1].body) == ["stored memory #1"]
    listed = json.loads(run_rheo("memory", "list", "--json", env=env).stdout)
    assert [i["content"]["label"] for i in listed] == [label]
    note = db_rows(home, "SELECT role, status, meta FROM turns")
    assert [(n["role"], n["status"]) for n in note] == [("assistant", "ok")]
    assert json.loads(note[0]["meta"])["client"].startswith("claude-code")


READ_BY_RHEO = {
    ("system", "init"): {"model": str, "apiKeySource": str, "mcp_servers": list, "tools": list},
    ("system", "api_retry"): {
        "attempt": int,
        "max_retries": int,
        "retry_delay_ms": (int, float),
        "error_status": int,
        "error": str,
    },
    ("assistant", None): {"message": dict},
    ("result", None): {
        "is_error": bool,
        "result": str,
        "usage": dict,
        "total_cost_usd": (int, float),
        "stop_reason": (str, type(None)),
        "api_error_status": (int, type(None)),
    },
}
"""The events and fields rheo's provider reads (providers/claude_code_events.py)."""


def _shape(run_events: list[dict[str, Any]]) -> dict[tuple[str, Any], dict[str, Any]]:
    """For each event kind rheo reads, the first such event's fields rheo reads."""
    found: dict[tuple[str, Any], dict[str, Any]] = {}
    for event in run_events:
        kind = (str(event["type"]), event.get("subtype") if event["type"] == "system" else None)
        if kind in READ_BY_RHEO and kind not in found:
            found[kind] = {k: event.get(k) for k in READ_BY_RHEO[kind]}
    return found


TINY_SERVER = """
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        result = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "tiny", "version": "1"}}
    elif m["method"] == "tools/list":
        result = {"tools": [{"name": n, "description": n, "inputSchema": {"type": "object"}}
                            for n in ("write_memory", "context")]}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": result}), flush=True)
"""
"""An MCP server over stdio in a few lines: initialize, tools/list, nothing else."""


def test_the_stand_in_prints_what_the_real_binary_prints(
    api, claude_home, claude_bin, home, clients, tmp_path
):
    """tests/bin/claude (the fast tests' Claude Code) against the real binary, run with
    rheo's own command line: the same events, with the fields rheo reads of the same types,
    for a reply with an MCP server and for a rate limit. The server is a minimal one that
    answers at once (`TINY_SERVER`): how both report a connected server is compared, not
    how soon ``rheo mcp`` starts on a busy machine (the other tests drive ``rheo mcp``)."""
    from rheo_cli.providers.base import ChatRequest, SystemBlock
    from rheo_cli.providers.claude_code import ClaudeCodeProvider
    from rheo_cli.providers.factory import MemoryServer
    from rheo_cli.turn.tools import specs_for

    stand_in = REPO / "tests" / "bin" / "claude"
    tiny = tmp_path / "tiny_server.py"
    tiny.write_text(TINY_SERVER)
    server = MemoryServer(argv=(sys.executable, "-S", str(tiny)))
    provider = ClaudeCodeProvider(workdir=tmp_path / "work", memory_server=server)
    request = ChatRequest(
        model="default",
        system=[SystemBlock("You are rheo.")],
        messages=[{"role": "user", "content": "hi"}],
        tools=specs_for(None),  # a stored turn's: the MCP server is offered
    )
    prompt = tmp_path / "system.txt"
    prompt.write_text("You are rheo.")
    provider.environ = {
        **claude_env(api, claude_home, home, claude_bin),
        "CLAUDE_CODE_MAX_RETRIES": "1",
    }
    env = provider.child_env()  # what rheo gives Claude Code

    def both(fake: dict[str, str]) -> tuple[dict[Any, Any], dict[Any, Any]]:
        shapes = []
        for binary in (str(claude_bin / "claude"), str(stand_in)):
            argv = provider.argv(request, binary, prompt)
            done = subprocess.run(
                argv,
                input=b"hi",
                env={**env, **fake},
                cwd=str(tmp_path),
                capture_output=True,
                timeout=120,
            )
            shapes.append(_shape(events(done.stdout)))
        return shapes[0], shapes[1]

    api.default = text("Hello from Claude Code.")
    real, fake = both({})
    assert set(real) == set(fake) == {("system", "init"), ("assistant", None), ("result", None)}
    for kind, fields in READ_BY_RHEO.items():
        for name, kinds in fields.items():
            if kind in real:
                assert isinstance(real[kind][name], kinds), (kind, name, real[kind][name])
                assert isinstance(fake[kind][name], kinds), (kind, name, fake[kind][name])
    servers = [
        [{k: s[k] for k in ("name", "status")} for s in shape[("system", "init")]["mcp_servers"]]
        for shape in (real, fake)
    ]
    assert servers[0] == servers[1] == [{"name": "rheo", "status": "connected"}]
    assert sorted(real[("system", "init")]["tools"]) == sorted(fake[("system", "init")]["tools"])
    assert real[("result", None)]["result"] == fake[("result", None)]["result"]
    for name in (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ):
        assert isinstance(real[("result", None)]["usage"][name], int), name
        assert isinstance(fake[("result", None)]["usage"][name], int), name

    api.default = error(429, "rate_limit_error", "slow down")
    real, fake = both({"FAKE_CLAUDE": "api_error", "FAKE_CLAUDE_STATUS": "429"})
    assert set(real) == set(fake)
    assert ("system", "api_retry") in real
    for kind in (("system", "api_retry"), ("result", None)):
        for name, kinds in READ_BY_RHEO[kind].items():
            assert isinstance(real[kind][name], kinds), (kind, name, real[kind][name])
            assert isinstance(fake[kind][name], kinds), (kind, name, fake[kind][name])
    for name in ("error_status", "error", "max_retries"):
        assert real[("system", "api_retry")][name] == fake[("system", "api_retry")][name], name
    assert real[("result", None)]["api_error_status"] == 429
    assert fake[("result", None)]["api_error_status"] == 429
    assert real[("result", None)]["is_error"] is fake[("result", None)]["is_error"] is True
