"""``rheo mcp`` as the MCP Inspector (2.12) sees it: every tool listed portably (its CLI,
``--cli --method tools/list --strict``), every tool called with valid and with invalid
arguments and the errors rheo answers for requests it cannot serve (``mcpdo``, the
Inspector's connection CLI: one ``rheo mcp`` for all the calls, as a client keeps it)."""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import netguard
import pytest
from helpers import REPO, db_rows

pytestmark = pytest.mark.realclients

TOOLS = [
    "write_memory",
    "memory_search",
    "memory_list",
    "memory_forget",
    "chat_search",
    "chat_recent",
    "context",
]

SERVER_ENV = {"RHEO_WORKER": "off", "RHEO_NOW": "2026-11-30T10:00:00+00:00"}
"""rheo mcp's environment besides its home and the network guard (the Inspector passes only
a few variables of its own to a server, so it is given whole)."""


def test_tools_list_is_every_tool_portable_with_plain_descriptions(clients, traced, home) -> None:
    """``inspector --cli rheo mcp --method tools/list --strict`` (under strace)."""
    env = {**SERVER_ENV, "RHEO_HOME": str(home), "PYTHONPATH": str(netguard.SITE_DIR)}
    command = [*traced.prefix(), clients.node, clients.inspector, "--cli"]
    # A loaded machine may take longer than the Inspector's 15 s to start a Python server.
    command += ["--connect-timeout", "90000"]
    command += [a for k, v in env.items() for a in ("-e", f"{k}={v}")]
    command += [sys.executable, "-m", "rheo_cli", "mcp", "--method", "tools/list", "--strict"]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd=str(REPO),
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home.parent), "LANG": "C.UTF-8"},
    )
    assert done.returncode == 0, done.stderr  # --strict: no schema portability problem
    tools = {t["name"]: t for t in json.loads(done.stdout)["tools"]}
    assert list(tools) == TOOLS
    for tool in tools.values():
        assert "outputSchema" not in tool, tool["name"]  # text for the model, no wrapper
        lines = tool["description"].splitlines()
        assert lines and not any(line.startswith(" ") for line in lines), tool["name"]
    assert tools["context"]["description"].startswith("What rheo knows")


Mcpdo = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def mcpdo(clients, traced, home, tmp_path) -> Iterator[Mcpdo]:
    """``mcpdo ARGS`` (JSON output) against one ``rheo mcp`` connected as ``@rheo``: the
    Inspector's daemon of this test alone (its own folder and token), run in the foreground
    under strace and stopped at the end with its server; each mcpdo command is traced too."""
    build = Path(clients.inspector).parents[2] / "mcpdo" / "build"
    folder = tmp_path / "mcpdo"
    folder.mkdir(mode=0o700)
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path / "inspector-home"),
        "LANG": "C.UTF-8",
        "MCP_INSPECTOR_DAEMON_DIR": str(folder),
        "MCP_INSPECTOR_DAEMON_TOKEN": secrets.token_urlsafe(24),
        "MCP_INSPECTOR_SECRET_STORE": "memory",  # a stdio server has no secret to keep
    }
    config = tmp_path / "servers.json"
    server_env = {
        **SERVER_ENV,
        "RHEO_HOME": str(home),
        "PYTHONPATH": str(netguard.SITE_DIR),
    }
    entry = {"command": sys.executable, "args": ["-m", "rheo_cli", "mcp"], "env": server_env}
    config.write_text(json.dumps({"mcpServers": {"rheo": {**entry, "cwd": str(REPO)}}}))
    daemon = subprocess.Popen(
        [*traced.prefix(), clients.node, str(build / "mcpdod.js")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*traced.prefix(), clients.node, str(build / "mcp-bin.js"), "--format", "json", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )

    try:
        deadline = time.monotonic() + 60
        while not (folder / "mcpdod.sock").exists():
            assert daemon.poll() is None, daemon.stderr.read() if daemon.stderr else ""
            assert time.monotonic() < deadline, "the Inspector's daemon did not start"
            time.sleep(0.05)
        # A loaded machine may take longer than the Inspector's 15 s to start a Python server.
        connected = run("connect", "rheo", "--config", str(config), "--connect-timeout", "90000")
        assert connected.returncode == 0, connected.stderr
        yield run
    finally:
        run("daemon", "stop")
        try:
            daemon.wait(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(timeout=10)


def call(mcpdo: Mcpdo, tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """(isError, text) of one tools/call through the Inspector."""
    done = mcpdo("@rheo", "tools/call", tool, json.dumps(arguments))
    assert done.returncode in (0, 5), done.stderr  # 5: the tool answered isError
    result = json.loads(done.stdout)
    text = "".join(c["text"] for c in result["content"] if c["type"] == "text")
    return bool(result.get("isError")), text


BAD = [
    ("write_memory", {"category": "hobby", "topic": "chess", "label": "Plays chess"}, "category:"),
    ("write_memory", {"category": "fact", "topic": "x"}, "label: Field required"),
    ("write_memory", {"category": "fact", "topic": "x", "label": "y", "due": "someday-ish"}, "due"),
    ("memory_search", {"query": ""}, "query: String should have at least 1 character"),
    ("memory_list", {"limit": 0}, "limit:"),
    ("memory_forget", {"id": "abc"}, "id: Input should be a valid integer"),
    ("memory_forget", {"id": 99}, "no memory item #99"),
    ("chat_search", {}, "query: Field required"),
    ("chat_recent", {"limit": 10000}, "limit:"),
    ("context", {"message": "   "}, "message must not be empty"),
]
"""A wrong argument for every tool (the SDK's checks and rheo's own refusals): tool, the
arguments, what the one line must say."""

NOISE = ("validation error", "pydantic", "http", "Error executing tool", "input_", "Traceback")


def test_every_tool_answers_valid_and_invalid_arguments_in_one_line(mcpdo, home) -> None:
    """Every invalid call first (nothing may be stored by them), then every tool with valid
    arguments, over one connection."""
    for tool, arguments, expected in BAD:
        is_error, text = call(mcpdo, tool, arguments)
        assert is_error, (tool, text)
        assert expected in text, (tool, text)
        assert "\n" not in text, (tool, text)
        for noise in NOISE:
            assert noise not in text, (tool, text)
    assert call(mcpdo, "memory_list", {}) == (False, "no stored facts")
    assert db_rows(home, "SELECT id FROM turns") == []  # not even the client's note

    def ok(tool: str, **arguments: Any) -> str:
        is_error, text = call(mcpdo, tool, arguments)
        assert not is_error, (tool, text)
        return text

    label = "Drinks flat whites with oat milk"
    stored = ok("write_memory", category="preference", topic="coffee", label=label)
    assert stored == "stored memory #1"
    assert label in ok("memory_search", query="oat milk")
    assert label in ok("memory_list")
    context = ok("context", message="what coffee do I drink?")
    assert "Current date and time" in context and label in context
    assert "remember: " + label in ok("chat_search", query="flat whites")
    assert "assistant: [" in ok("chat_recent", limit=5)  # the client's note, not the person's
    assert ok("memory_forget", id=1).startswith("forgotten #1")
    assert ok("memory_list") == "no stored facts"

    # what no tool serves: an unknown prompt, resource or tool
    prompt = mcpdo("@rheo", "prompts/get", "nope")
    assert prompt.returncode != 0 and "unknown prompt: nope" in prompt.stderr
    resource = mcpdo("@rheo", "resources/read", "rheo://nope")
    assert resource.returncode != 0 and "Unknown resource: rheo://nope" in resource.stderr
    tool = mcpdo("@rheo", "tools/call", "nope")
    assert tool.returncode != 0 and "nope" in tool.stderr
    for answer in (prompt, resource, tool):
        assert len(answer.stderr.strip().splitlines()) == 1, answer.stderr
