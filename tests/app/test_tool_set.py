"""One memory tool set (`rheo_cli.app.tools`): rheo's chat (its tool loop, with the in-process
fake model) and ``rheo mcp`` (a real subprocess, through the official SDK's client) offer
the same schema per tool, give the same output for the same call, and refuse bad input with
the same one line."""

from __future__ import annotations

import inspect
import os
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import netguard
import pytest
from fakeprovider import Canned
from helpers import REPO, db_rows

from rheo_cli.app.tools import actions
from rheo_cli.app.tools.specs import TOOLS, ToolInputError, offered

pytest.importorskip("mcp")

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.types import Implementation  # noqa: E402

NOW = "2026-11-30T10:00:00+00:00"
CHAT_TOOLS = ["write_memory", "memory_search", "memory_list", "chat_search"]
MCP_TOOLS = [*CHAT_TOOLS[:3], "memory_forget", "chat_search", "chat_recent", "context"]


def mcp(home: Path, script: Callable[[ClientSession], Awaitable[Any]], *args: str) -> Any:
    """Start ``rheo mcp ARGS`` on ``home`` at `NOW` and run ``script`` with a session."""
    env = {
        "RHEO_HOME": str(home),
        "RHEO_WORKER": "off",
        "RHEO_NOW": NOW,
        "HOME": str(home.parent),
        "PATH": os.environ.get("PATH", ""),
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rheo_cli", "mcp", *args],
        env=netguard.subprocess_env(env),
        cwd=str(REPO),
    )
    out: dict[str, Any] = {}

    async def main() -> None:
        with anyio.fail_after(90), open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(
                    read, write, client_info=Implementation(name="twin", version="1")
                ) as session,
            ):
                await session.initialize()
                out["value"] = await script(session)

    anyio.run(main)
    return out["value"]


def over_mcp(home: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    """``(is_error, text)`` of each call, in order, over one ``rheo mcp`` connection."""

    async def script(session: ClientSession) -> list[tuple[bool, str]]:
        answers = []
        for name, args in calls:
            result = await session.call_tool(name, args)
            body = "\n".join(c.text for c in result.content if getattr(c, "text", None))
            answers.append((bool(result.is_error), body))
        return answers

    result: list[tuple[bool, str]] = mcp(home, script)
    return result


def in_chat(rheo, fake_model, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str]]:
    """``(is_error, text)`` of each call, made by the model in one round of a ``rheo ask``,
    as the tool results rheo sent back to the model."""
    fake_model.add(Canned(tool_calls=list(calls)), "done")
    result = rheo("ask", "look these up for me")
    assert result.exit_code == 0, result.stderr
    sent = fake_model.requests[-1].messages[-1]["content"]
    return [(bool(r.get("is_error")), r["content"]) for r in sent]


def seed(rheo, fake_model, monkeypatch) -> None:
    """Facts in several states (pinned, due, superseded) and one exchange, at `NOW`."""
    monkeypatch.setenv("RHEO_NOW", NOW)
    for args in (
        ["Drinks flat whites with oat milk", "-t", "coffee", "--category", "preference"],
        ["Send the Acme invoice", "-t", "acme invoice", "--due", "2026-12-04"],
        ["Allergic to peanuts", "-t", "allergy", "--pin"],
        ["Lives in Porto", "-t", "city", "--confidence", "0.9"],
        ["Lives in Lisbon", "-t", "city", "--confidence", "0.9"],
    ):
        assert rheo("memory", "add", *args).exit_code == 0
    fake_model.add("Noted: Jorge Alvarez, the plumber.")
    assert rheo("ask", "The plumber is called Jorge Alvarez.").exit_code == 0


def test_the_chat_offers_four_tools_and_mcp_every_one():
    assert [t.name for t in offered("chat")] == CHAT_TOOLS
    assert [t.name for t in offered("mcp")] == MCP_TOOLS
    assert [t.name for t in offered("mcp", log_turns=True)] == [*MCP_TOOLS, "log_turn"]


def test_each_tool_takes_exactly_the_arguments_of_its_schema():
    for name, tool in TOOLS.items():
        params = list(inspect.signature(actions._RUNNERS[name]).parameters)
        assert params[:2] == ["rt", "caller"], name
        assert params[2:] == [*tool.properties, *tool.assistant_only], name
        assert set(tool.required) <= set(tool.properties), name


def test_an_assistants_chat_adds_scope_and_nothing_else():
    tool = TOOLS["write_memory"]
    plain, sarah = tool.schema(), tool.schema("sarah")
    assert "scope" not in plain["properties"]
    assert sarah["properties"] == {**plain["properties"], "scope": sarah["properties"]["scope"]}
    assert sarah["properties"]["scope"]["enum"] == ["shared", "assistant"]
    assert sarah["required"] == plain["required"] == ["category", "topic", "label"]
    assert tool.describe("sarah").startswith(tool.describe())


@pytest.mark.boundary
def test_the_chat_request_and_tools_list_carry_the_same_schemas(rheo, fake_model, home):
    fake_model.add("ok")
    assert rheo("ask", "hi").exit_code == 0
    sent = {t.name: t for t in fake_model.requests[0].tools}

    async def script(session: ClientSession) -> Any:
        return (await session.list_tools()).tools

    listed = {t.name: t for t in mcp(home, script)}
    assert list(sent) == CHAT_TOOLS and list(listed) == MCP_TOOLS
    for name in CHAT_TOOLS:
        assert sent[name].input_schema == listed[name].input_schema, name
        assert sent[name].description == listed[name].description, name
    for name, tool in listed.items():
        assert tool.input_schema == TOOLS[name].schema(), name
    assert listed["write_memory"].input_schema["required"] == ["category", "topic", "label"]
    assert "content" not in listed["write_memory"].input_schema["properties"]  # flat, not nested


GOOD = [
    ("memory_search", {"query": "oat milk"}),
    ("memory_search", {"query": "Porto Lisbon", "include_inactive": True}),
    ("memory_list", {}),
    ("memory_list", {"include_inactive": True, "limit": "3"}),
    ("memory_list", {"category": "open_item", "profile": "mallory"}),
    ("chat_search", {"query": "plumber", "limit": 5}),
    ("write_memory", {"category": "team", "topic": "plumber", "label": "Plumber: Jorge"}),
]
BAD = [
    ("write_memory", {"category": "hobby", "topic": "chess", "label": "Plays chess"}),
    ("write_memory", {"category": "fact", "topic": "chess"}),
    ("write_memory", {"category": "fact", "topic": "chess", "label": "Chess", "confidence": 2}),
    ("write_memory", {"category": "fact", "topic": "chess", "label": "   "}),
    ("write_memory", {"category": "fact", "topic": "!!!", "label": "???"}),
    ("write_memory", {"category": "open_item", "topic": "tax", "label": "Tax", "due": "someday"}),
    ("write_memory", {"category": "fact", "topic": "chess", "label": "x" * 501}),
    ("memory_search", {"query": ""}),
    ("memory_list", {"limit": 0}),
    ("chat_search", {}),
    ("chat_search", {"query": "plumber", "limit": "many"}),
    ("chat_search", {"query": None}),
]


@pytest.mark.boundary
def test_the_same_calls_give_the_same_output_in_chat_and_over_mcp(
    rheo, fake_model, home, monkeypatch
):
    seed(rheo, fake_model, monkeypatch)
    twin = home.parent / "twin-home"
    shutil.copytree(home, twin)  # the same store for each front end (each writes once)
    chat = in_chat(rheo, fake_model, GOOD + BAD)
    client = over_mcp(twin, GOOD + BAD)
    for (name, args), said, answered in zip(GOOD + BAD, chat, client, strict=True):
        assert said == answered, (name, args)
    good, bad = chat[: len(GOOD)], chat[len(GOOD) :]
    assert not any(is_error for is_error, _ in good), good
    assert all(is_error for is_error, _ in bad), bad
    found, inactive, listed, capped, dues, history, wrote = (t for _, t in good)
    # The one output format: topic, state, pinned, confidence, dates, due.
    assert found == (
        "#1 (preference, topic coffee, active, confidence 0.80, since 2026-11-30) "
        "Drinks flat whites with oat milk"
    )
    assert "#4 (fact, topic city, superseded, confidence 0.90, since 2026-11-30)" in inactive
    assert "(fact, topic allergy, active, pinned, confidence 1.00" in listed
    assert len(capped.splitlines()) == 3
    assert dues == (
        "#2 (open_item, topic acme-invoice, active, confidence 0.80, since 2026-11-30, "
        "due 2026-12-04) Send the Acme invoice (ignored profile: rheo decides this)"
    )
    assert sorted(history.splitlines()) == [
        "#1 [2026-11-30 10:00] user: The plumber is called Jorge Alvarez.",
        "#2 [2026-11-30 10:00] assistant: Noted: Jorge Alvarez, the plumber.",
    ]
    assert "look these up" not in history  # the chat's own question is not a search result
    assert wrote == "stored memory #6"
    # Each refusal is one line naming the argument, the same through both.
    for (_, text_), (name, args) in zip(bad, BAD, strict=True):
        assert text_ and "\n" not in text_, (name, args, text_)
    assert [t for _, t in bad] == [
        "category: Input should be 'goal', 'blocker', 'preference', 'operations', 'team', "
        "'strategy', 'win', 'open_item' or 'fact'",
        "label: Field required",
        "confidence: Input should be less than or equal to 1",
        "a memory needs some content",
        "a memory topic needs at least one letter or digit",
        "due 'someday' is not a date: try friday, next monday, in 2 weeks, end of month, "
        "2026-12-24",
        "label: String should have at most 500 characters",
        "query: String should have at least 1 character",
        "limit: Input should be greater than or equal to 1",
        "query: Field required",
        "limit: Input should be a valid integer, unable to parse string as an integer",
        "query: Input should be a valid string",
    ]
    # Each front end stored its one good write, and nothing from the refusals.
    for store, source in ((home, "tool"), (twin, "mcp")):
        rows = db_rows(store, "SELECT id, source, label FROM memory_items ORDER BY id")
        assert [tuple(r) for r in rows][5:] == [(6, source, "Plumber: Jorge")]


def test_the_chat_has_no_tool_it_does_not_offer(rheo, fake_model, home, monkeypatch):
    seed(rheo, fake_model, monkeypatch)
    said = in_chat(rheo, fake_model, [("memory_forget", {"id": 1}), ("context", {"message": "x"})])
    assert said == [(True, "unknown tool 'memory_forget'"), (True, "unknown tool 'context'")]
    assert db_rows(home, "SELECT status FROM memory_items WHERE id = 1")[0][0] == "active"


class Refused(str):
    """The one line a refused argument gives (after ``NAME: ``)."""


@pytest.mark.parametrize(
    ("prop", "raw", "expected"),
    [
        ({"type": "integer", "minimum": 1, "maximum": 5}, "3", 3),
        ({"type": "integer", "minimum": 1, "maximum": 5}, 4.0, 4),
        (
            {"type": "integer"},
            1.5,
            Refused("Input should be a valid integer, got a number with a fractional part"),
        ),
        ({"type": "integer"}, True, Refused("Input should be a valid integer")),
        ({"type": "integer", "maximum": 5}, 6, Refused("Input should be less than or equal to 5")),
        ({"type": "number", "minimum": 0, "maximum": 1}, "0.5", 0.5),
        ({"type": "number"}, float("nan"), Refused("Input should be a finite number")),
        (
            {"type": "number"},
            "lots",
            Refused("Input should be a valid number, unable to parse string as a number"),
        ),
        ({"type": "boolean"}, "yes", True),
        ({"type": "boolean"}, 0, False),
        ({"type": "boolean"}, "maybe", Refused("Input should be a valid boolean")),
        ({"type": "string"}, 5, Refused("Input should be a valid string")),
        (
            {"type": "string", "minLength": 2},
            "a",
            Refused("String should have at least 2 characters"),
        ),
        ({"type": "string", "enum": ["a", "b"]}, "c", Refused("Input should be 'a' or 'b'")),
        ({"type": "object"}, [1], Refused("Input should be a valid object")),
    ],
)
def test_arguments_are_read_as_mcp_clients_read_them(prop, raw, expected):
    from rheo_cli.app.tools.specs import Tool

    tool = Tool(name="t", description="d", properties={"x": prop}, required=("x",))
    if isinstance(expected, Refused):
        with pytest.raises(ToolInputError) as refused:
            tool.check({"x": raw})
        assert str(refused.value) == f"x: {expected}"
    else:
        values, ignored = tool.check({"x": raw, "y": 1})
        assert values == {"x": expected} and ignored == ["y"]


def test_absent_and_null_arguments_take_the_schemas_default():
    values, ignored = TOOLS["memory_search"].check({"query": "tea", "limit": None})
    assert values == {"query": "tea", "include_inactive": False, "limit": 10}
    assert ignored == []
    with pytest.raises(ToolInputError, match="^arguments: Input should be a valid object$"):
        TOOLS["memory_search"].check(["tea"])


@pytest.mark.boundary
def test_tools_list_loads_no_engine(home):
    code = (
        "import sys, anyio\n"
        "from rheo_cli.app.app import build\n"
        "from rheo_cli.mcpserver.server import build as server\n"
        "tools = anyio.run(server(build(), log_turns=True).list_tools)\n"
        "print(len(tools), sorted(m for m in sys.modules if m.startswith(("
        "'rheo_cli.memory.facts.items', 'rheo_cli.app.tools.actions', "
        "'rheo_cli.memory.context', 'rheo_cli.turn'))))\n"
    )
    env = netguard.subprocess_env({**os.environ, "RHEO_HOME": str(home)})
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=env, cwd=str(REPO), timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().strip() == "8 []"
    assert not (home / "rheo.db").exists()
