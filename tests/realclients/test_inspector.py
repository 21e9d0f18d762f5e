"""``rheo mcp`` as the MCP Inspector CLI sees it: every tool listed portably, every tool
called with valid and with invalid arguments."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import netguard
import pytest
from helpers import REPO

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


def inspect(clients: Any, traced: Any, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``inspector --cli rheo mcp ARGS`` (under strace); the server's environment is given
    whole, as the Inspector passes only a few variables of its own."""
    server_env = {
        "RHEO_HOME": str(home),
        "RHEO_WORKER": "off",
        "PYTHONPATH": str(netguard.SITE_DIR),
        "RHEO_NOW": "2026-11-30T10:00:00+00:00",
    }
    env_args = [a for k, v in server_env.items() for a in ("-e", f"{k}={v}")]
    # A loaded machine may take longer than the Inspector's 15 s to start a Python server.
    command = [*traced.prefix(), clients.node, clients.inspector, "--cli"]
    command += ["--connect-timeout", "90000", *env_args]
    command += [sys.executable, "-m", "rheo_cli", "mcp", *args]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd=str(REPO),
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(home.parent), "LANG": "C.UTF-8"},
    )


def called(clients: Any, traced: Any, home: Path, tool: str, *pairs: str) -> tuple[bool, str]:
    """(is_error, text) of one tools/call through the Inspector."""
    args = ["--method", "tools/call", "--tool-name", tool]
    if pairs:
        args += ["--tool-arg", *pairs]
    done = inspect(clients, traced, home, *args)
    assert done.returncode in (0, 5), done.stderr  # 5: the tool answered isError
    result = json.loads(done.stdout)
    text = "".join(c["text"] for c in result["content"] if c["type"] == "text")
    return bool(result.get("isError")), text


def test_tools_list_is_every_tool_portable_with_plain_descriptions(clients, traced, home) -> None:
    done = inspect(clients, traced, home, "--method", "tools/list", "--strict")
    assert done.returncode == 0, done.stderr  # --strict: no schema portability problem
    tools = {t["name"]: t for t in json.loads(done.stdout)["tools"]}
    assert list(tools) == TOOLS
    for tool in tools.values():
        assert "outputSchema" not in tool, tool["name"]  # text for the model, no wrapper
        lines = tool["description"].splitlines()
        assert lines and not any(line.startswith(" ") for line in lines), tool["name"]
    assert tools["context"]["description"].startswith("What rheo knows")


def test_every_tool_called_with_valid_arguments(clients, traced, home) -> None:
    def call(tool: str, *pairs: str) -> str:
        is_error, text = called(clients, traced, home, tool, *pairs)
        assert not is_error, (tool, text)
        return text

    label = "Drinks flat whites with oat milk"
    assert call("write_memory", "category=preference", "topic=coffee", f"label={label}") == (
        "stored memory #1"
    )
    reads = [
        ("memory_search", "query=oat milk"),
        ("memory_list",),
        ("context", "message=what coffee do I drink?"),
        ("chat_search", "query=flat whites"),
        ("chat_recent", "limit=5"),
    ]
    with ThreadPoolExecutor(3) as pool:
        found, listed, context, history, recent = pool.map(lambda r: call(*r), reads)
    assert label in found and label in listed
    assert "Current date and time" in context and label in context
    assert "remember: " + label in history
    assert "assistant: [inspector-cli" in recent  # the client's note, not the person's words
    assert call("memory_forget", "id=1").startswith("forgotten #1")
    assert call("memory_list") == "no stored facts"


BAD = [
    ("write_memory", ("category=hobby", "topic=chess", "label=Plays chess"), "category:"),
    ("memory_search", ('query=""',), "query: String should have at least 1 character"),
    ("memory_list", ("limit=0",), "limit:"),
    ("memory_forget", ("id=abc",), "id:"),
    ("chat_search", (), "query: Field required"),
    ("chat_recent", ("limit=10000",), "limit:"),
    ("context", ("message=   ",), "message must not be empty"),
]


def test_every_tool_refuses_invalid_arguments_in_one_line(clients, traced, home) -> None:
    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(lambda bad: called(clients, traced, home, bad[0], *bad[1]), BAD))
    for (tool, _, expected), (is_error, text) in zip(BAD, answers, strict=True):
        assert is_error, (tool, text)
        assert expected in text, (tool, text)
        assert "\n" not in text, (tool, text)
        for noise in ("validation error", "pydantic", "http", "Error executing tool", "input_"):
            assert noise not in text, (tool, text)
    assert not (home / "rheo.db").exists()  # nothing was stored (no store was even opened)
