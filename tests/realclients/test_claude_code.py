"""rheo's claude-code provider and ``rheo mcp`` driven through the real Claude Code binary
against the fake Messages API."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import tempfile
import time
import uuid
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


MARKERS = ("MARKER-USER-CLAUDE-MD", "MARKER-PARENT-CLAUDE-MD", "MARKER-AUTO-MEMORY")
"""Words of the person's CLAUDE.md files and auto-memory: none may reach rheo's calls."""


def _claude(claude_bin: Path, env: dict[str, str], *args: str, cwd: Path) -> str:
    """Run the real ``claude ARGS`` (a subcommand: plugin install, mcp add-json); its stdout."""
    done = subprocess.run(
        [str(claude_bin / "claude"), *args], env=env, cwd=cwd, capture_output=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.decode()


def _persons_setup(claude_bin: Path, env: dict[str, str], person: Path, home: Path) -> Path:
    """The person's own Claude Code setup, as a heavy user has it: hooks on every event in
    ~/.claude/settings.json, a plugin with hooks of its own (from a marketplace folder, with
    the real ``claude plugin install``), ~/.claude/CLAUDE.md, a CLAUDE.md above rheo's folder,
    an auto-memory for rheo's folder, and rheo's MCP server added with ``claude mcp add-json
    -s user`` as the README says. Returns the file every hook appends a line to."""
    ran = person / "hook-ran"
    hook = {"type": "command", "command": f"echo user >> {ran}"}
    events_ = ("SessionStart", "UserPromptSubmit", "PreToolUse", "Stop", "SessionEnd")
    market = person / "marketplace"
    plugin = market / "marker"
    (market / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / "hooks").mkdir()
    (market / ".claude-plugin" / "marketplace.json").write_text(
        json.dumps(
            {
                "name": "local",
                "owner": {"name": "me"},
                "plugins": [
                    {"name": "marker", "source": "./marker", "description": "the person's plugin"}
                ],
            }
        )
    )
    (plugin / ".claude-plugin" / "plugin.json").write_text(
        json.dumps({"name": "marker", "version": "1.0.0", "description": "hooks"})
    )
    plugin_hook = [{"hooks": [{"type": "command", "command": f"echo plugin >> {ran}"}]}]
    (plugin / "hooks" / "hooks.json").write_text(
        json.dumps({"hooks": {"SessionStart": plugin_hook, "UserPromptSubmit": plugin_hook}})
    )
    settings = {"hooks": {e: [{"hooks": [hook]}] for e in events_}}
    (person / ".claude" / "settings.json").write_text(json.dumps(settings))
    (person / ".claude" / "CLAUDE.md").write_text("MARKER-USER-CLAUDE-MD\n")
    work = home / "claude-code"  # where rheo runs Claude Code: its auto-memory folder
    work.mkdir(parents=True)
    (home.parent / "CLAUDE.md").write_text("MARKER-PARENT-CLAUDE-MD\n")  # above rheo's folder
    slug = "".join(c if c.isalnum() else "-" for c in str(work))
    memory = person / ".claude" / "projects" / slug / "memory"
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("MARKER-AUTO-MEMORY\n")
    _claude(claude_bin, env, "plugin", "marketplace", "add", str(market), cwd=person)
    _claude(claude_bin, env, "plugin", "install", "marker@local", cwd=person)
    entry = {
        "type": "stdio",
        "command": sys.executable,
        "args": ["-m", "rheo_cli", "mcp"],
        "alwaysLoad": True,
    }
    _claude(claude_bin, env, "mcp", "add-json", "-s", "user", "rheo", json.dumps(entry), cwd=person)
    return ran


def _mcp_tools(body: dict[str, Any]) -> set[str]:
    return {t["name"] for t in body.get("tools", []) if t["name"].startswith("mcp__")}


def _found_on_disk(secret: str, *folders: Path, skip: Path) -> list[str]:
    """The files under ``folders`` holding ``secret`` (``skip``: the test's own strace log)."""
    found = subprocess.run(
        ["grep", "-rlF", "-D", "skip", "--no-messages", secret, *map(str, folders)],
        capture_output=True,
        text=True,
    )
    return [f for f in found.stdout.splitlines() if not f.startswith(str(skip))]


def test_rheo_ask_through_claude_code_with_the_persons_own_setup_around(
    api, claude_home, claude_bin, home, clients, traced
):
    """One person, one HOME, the real Claude Code run four times:

    1. the control: the README's setup (``claude mcp add-json``, then ``claude -p
       --allowedTools mcp__rheo``) stores a fact as the client's note, and the person's
       hooks, plugin, CLAUDE.md files and auto-memory all reach a plain ``claude -p``;
    2. ``rheo ask -u``: the model is offered every tool of ``rheo mcp`` (and no other MCP
       tool); write_memory, context and memory_forget run; the fact lands in ``rheo memory
       list``; the cost is printed; none of the person's setup is in the call;
    3. ``rheo ask --incognito`` with a 154 KB assistant prompt: the prompt arrives whole; no
       MCP tool at all is offered (so the write_memory the model tries stores nothing), and
       the secret said is nowhere on disk afterwards (HOME, rheo's home, the temp folder);
    4. ``rheo maintain``: the extraction of (2) runs through Claude Code with no MCP tool,
       not even the person's user-scope ``rheo`` server (``--strict-mcp-config``);
    and no transcript is left by rheo's calls."""
    env = claude_env(api, claude_home, home, claude_bin)
    ran = _persons_setup(claude_bin, env, claude_home, home)
    work = home / "claude-code"

    # 1. the control: a plain `claude -p` with the person's setup, as the README sets it up
    spare = "Keeps the spare key under the blue pot"
    api.queue(
        tool_use("mcp__rheo__write_memory", {"category": "fact", "topic": "key", "label": spare}),
        text("Stored."),
    )
    plain = subprocess.run(
        [str(claude_bin / "claude"), "-p", "--output-format", "stream-json", "--verbose"]
        + ["--allowedTools", "mcp__rheo"],
        input=b"remember where the spare key is",
        env=env,
        cwd=work,
        capture_output=True,
        timeout=120,
    )
    assert plain.returncode == 0, plain.stderr
    init = next(e for e in events(plain.stdout) if e.get("subtype") == "init")
    assert {"name": "rheo", "status": "connected"}.items() <= init["mcp_servers"][0].items()
    assert set(init["tools"]) >= TOOLS
    assert tool_results(api.message_requests[1].body) == ["stored memory #1"]
    note = db_rows(home, "SELECT role, status, meta FROM turns")
    assert [(n["role"], n["status"]) for n in note] == [("assistant", "ok")]  # not `user`
    assert json.loads(note[0]["meta"])["client"].startswith("claude-code")
    hooks = ran.read_text().split()
    assert "user" in hooks and "plugin" in hooks  # both kinds of hook run in a plain call
    control = json.dumps(api.message_requests[0].body)
    for marker in MARKERS:
        assert marker in control, marker
    ran.unlink()
    for path in transcripts(claude_home):
        path.unlink()
    api.requests.clear()

    # 2. rheo ask: every tool of rheo mcp, three of them called, the cost shown
    api.queue(
        tool_use(
            "mcp__rheo__write_memory",
            {"category": "preference", "topic": "coffee", "label": "Drinks oat flat whites"},
        ),
        tool_use("mcp__rheo__context", {"message": "where is the spare key?"}),
        tool_use("mcp__rheo__memory_forget", {"id": 1}),
        text("Noted: oat flat whites."),
    )
    done = run_rheo(
        "ask",
        "-u",
        "--provider",
        "claude-code",
        "I drink oat flat whites now",
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == "Noted: oat flat whites."
    calls = [r.body for r in api.message_requests]  # every request of rheo's calls
    first, *rest = calls
    assert _mcp_tools(first) == TOOLS  # all of rheo mcp's, nothing of anyone else's
    system = json.dumps(first["system"])
    assert "Current date and time" in system  # rheo's system prompt
    user = json.dumps(first["messages"])
    assert "=== CURRENT MEMORY ===" in user and spare in user  # injected context
    assert "I drink oat flat whites now" in user
    wrote, ctx, forgot = (tool_results(body)[0] for body in rest)
    # plain text, not an output-schema wrapper ({"result": ...})
    assert wrote == "stored memory #2"
    assert "Current date and time" in ctx and spare in ctx
    assert forgot.startswith("forgotten #1")
    cost = json.loads(
        db_rows(home, "SELECT meta FROM turns WHERE role = 'assistant' ORDER BY id DESC")[0]["meta"]
    )["cost_usd"]
    assert cost > 0  # Claude Code's figure for the whole call, tool round trips included
    shown = done.stderr.decode().strip().splitlines()[-1]
    assert shown.startswith("rheo: tokens: ") and shown.endswith(f"; cost ${round(cost, 6):g}")

    # 3. --incognito with a long assistant prompt: no tool, nothing kept anywhere
    secret = f"PIN-{uuid.uuid4().hex[:12]}"
    long_prompt = "You are Sarah. " + "Be kind. " * 17_000  # 153 KB: over an argument's limit
    (home / "sarah.md").write_text(long_prompt)
    (home / "config.toml").write_text('[assistants.sarah]\nprompt_file = "sarah.md"\n')
    api.requests.clear()
    api.queue(
        tool_use("mcp__rheo__write_memory", {"category": "fact", "topic": "pin", "label": secret}),
        text("I will not keep it."),
    )
    hidden = run_rheo(
        "ask",
        "--incognito",
        "-a",
        "sarah",
        "--provider",
        "claude-code",
        f"my PIN is {secret}",
        env=env,
        timeout=120,
    )
    assert hidden.returncode == 0, hidden.stderr
    assert hidden.stdout.decode().strip() == "I will not keep it."
    bodies = [r.body for r in api.message_requests]
    calls += bodies
    assert long_prompt.strip() in "".join(b["text"] for b in bodies[0]["system"])
    assert secret in json.dumps(bodies[0]["messages"])  # the call was made...
    assert not [t for body in bodies for t in _mcp_tools(body)]  # ...with no MCP tool at all
    assert "No such tool available" in tool_results(bodies[1])[0]
    # what (2) wrote is in rheo's memory; nothing of (3) is
    listed = json.loads(run_rheo("memory", "list", "--json", env=env).stdout)
    assert [(i["content"]["label"], i["source"]) for i in listed] == [
        ("Drinks oat flat whites", "mcp")
    ]

    # 4. the extraction of (2), through Claude Code, gets no MCP server
    api.requests.clear()
    api.default = text('{"facts": []}')
    maintained = run_rheo("maintain", "--json", env=env, timeout=120)
    assert maintained.returncode == 0, maintained.stderr
    extraction = [r.body for r in api.message_requests]
    calls += extraction
    assert extraction and "You extract durable facts" in json.dumps(extraction[0]["system"])
    assert not [t for body in extraction for t in _mcp_tools(body)]

    # none of the person's setup in any of rheo's calls, and no transcript of them
    sent = json.dumps(calls)
    for marker in MARKERS:
        assert marker not in sent, marker
    assert not ran.exists()  # no hook ran: neither the person's nor their plugin's
    assert transcripts(claude_home) == []
    where = _found_on_disk(
        secret, claude_home, home, Path(tempfile.gettempdir()), skip=traced.log.parent
    )
    assert where == []  # not in rheo's store, Claude Code's files or any temporary file


def test_a_refused_key_or_login_ends_at_once_and_a_rate_limit_is_named(
    api, claude_home, claude_bin, home, clients
):
    """A 401 stops Claude Code at its first retry: with an API key, the key is named; with
    a subscription login (the person's OAuth credentials, which reach the API through
    rheo's ``--setting-sources ""``), /login is. A 429 is a rate limit, each retry noted."""
    env = claude_env(api, claude_home, home, claude_bin)
    # No MCP server to wait for (these calls fail before any tool): the person's own MCP
    # file, empty, is passed instead of rheo's server.
    home.mkdir(parents=True)
    (home / "mcp.json").write_text('{"mcpServers": {}}')
    (home / "config.toml").write_text(f'[claude_code]\nmcp_config = "{home / "mcp.json"}"\n')
    api.queue(*[error(401, "authentication_error", "invalid x-api-key")] * 11)
    started = time.monotonic()
    refused = run_rheo("ask", "--provider", "claude-code", "hello", env=env, timeout=120)
    assert time.monotonic() - started < 30  # Claude Code alone: ten retries over 3 minutes
    assert refused.returncode == 1
    assert refused.stderr.decode() == (
        "rheo: Claude Code's API key was refused (401): check ANTHROPIC_API_KEY "
        "(the question is kept: 'rheo ask --retry' or /retry sends it again)\n"
    )
    assert len(api.message_requests) == 1  # stopped at Claude Code's first retry

    # a subscription login: Claude Code's credentials file, no API key
    api.reset()
    api.queue(*[error(401, "authentication_error", "OAuth token has expired")] * 11)
    token = "sk-ant-oat01-test-dummy"
    expires = int((time.time() + 86_400) * 1000)
    (claude_home / ".claude" / ".credentials.json").write_text(
        json.dumps(
            {
                "claudeAiOauth": {
                    "accessToken": token,
                    "refreshToken": "sk-ant-ort01-test-dummy",
                    "expiresAt": expires,
                    "scopes": ["user:inference", "user:profile"],
                    "subscriptionType": "pro",
                }
            }
        )
    )
    # On a login, Claude Code asks api.anthropic.com for the account's profile whatever
    # ANTHROPIC_BASE_URL says (a DNS query, seen with strace): a proxy on a closed loopback
    # port makes that fail at once, on loopback.
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        login = {k: v for k, v in env.items() if k != "ANTHROPIC_API_KEY"}
        login |= {
            "HTTPS_PROXY": f"http://127.0.0.1:{closed.getsockname()[1]}",
            "NO_PROXY": "127.0.0.1,localhost",
        }
        expired = run_rheo("ask", "--provider", "claude-code", "hello", env=login, timeout=120)
    assert expired.returncode == 1
    assert expired.stderr.decode().startswith(
        "rheo: Claude Code is not logged in: run 'claude' and /login"
    )
    assert [r.api_key for r in api.message_requests] == [token]  # the login was used

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
    kinds = [json.loads(m["meta"])["error"]["kind"] for m in meta]
    assert kinds == ["auth", "auth", "rate_limit"]


def test_always_load_has_the_tools_on_the_first_request_from_a_slow_server(
    api, claude_home, claude_bin, home, clients, tmp_path
):
    """rheo's MCP entry says alwaysLoad: Claude Code waits for the server (2.1.197: up to
    about 7 s), here one that answers after 2 s. Without it (the control, Claude Code
    2.1.197, which sends its first request about 2 s after it starts) a server answering
    after 5 s — rheo mcp on a loaded machine — offers nothing. (The server is a minimal one,
    `TINY_SERVER`, started late: what is tested is rheo's entry and Claude Code's wait; the
    other tests show rheo mcp's own tools on the first request.)"""
    from rheo_cli.providers.claude_code import ClaudeCodeProvider
    from rheo_cli.providers.factory import MemoryServer

    env = claude_env(api, claude_home, home, claude_bin)
    env.pop("MCP_CONNECTION_NONBLOCKING", None)
    tiny = tmp_path / "tiny_server.py"
    tiny.write_text(TINY_SERVER)
    offers = {"mcp__rheo__write_memory", "mcp__rheo__context"}

    def slow(seconds: float) -> MemoryServer:
        command = f"sleep {seconds}; exec {sys.executable} -S {tiny}"
        return MemoryServer(argv=("/bin/sh", "-c", command))

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
    assert servers[0]["status"] == "connected" and tools >= offers
    if clients.claude_version == "2.1.197":
        servers, tools = offered(loose)
        assert servers[0]["status"] == "pending" and not tools & offers


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
    from rheo_cli.app.tools.chat import specs as specs_for
    from rheo_cli.providers.base import ChatRequest, SystemBlock
    from rheo_cli.providers.claude_code import ClaudeCodeProvider
    from rheo_cli.providers.factory import MemoryServer

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
