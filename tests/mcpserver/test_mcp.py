"""``rheo mcp``: the MCP server, driven by the official SDK's own client over stdio against a
real ``rheo mcp`` subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import netguard
import pytest
from helpers import REPO, db_rows, mcp_initialize, run_rheo

from rheo_cli.extras import install_hint

pytest.importorskip("mcp")

pytestmark = pytest.mark.boundary  # every test here drives a rheo mcp subprocess

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.types import Implementation  # noqa: E402

CLIENT = Implementation(name="claude-code-test", version="2.1.0")


def serve(
    home: Path,
    script: Callable[[ClientSession], Awaitable[Any]],
    *args: str,
    env: dict[str, str] | None = None,
) -> Any:
    """Start ``rheo mcp ARGS`` as a subprocess and run ``script`` with a connected session."""
    full = {
        "RHEO_HOME": str(home),
        "RHEO_WORKER": "off",
        "HOME": str(home.parent),
        "PATH": os.environ.get("PATH", ""),
        **(env or {}),
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "rheo_cli", "mcp", *args],
        env=netguard.subprocess_env(full),
        cwd=str(REPO),
    )
    out: dict[str, Any] = {}

    async def main() -> None:
        with anyio.fail_after(60), open(os.devnull, "w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write, client_info=CLIENT) as session,
            ):
                await session.initialize()
                out["value"] = await script(session)

    anyio.run(main)
    return out["value"]


async def call(session: ClientSession, name: str, args: dict[str, Any]) -> tuple[bool, str]:
    result = await session.call_tool(name, args)
    text = "\n".join(c.text for c in result.content if getattr(c, "text", None) is not None)
    return bool(result.is_error), text


def counts(home: Path) -> tuple[int, int, int]:
    """(turns, memory items, memory events) in the store (none yet: ``rheo mcp`` opens the
    store on the first tool call that needs it)."""
    if not (home / "rheo.db").exists():
        return (0, 0, 0)
    return (
        db_rows(home, "SELECT count(*) FROM turns")[0][0],
        db_rows(home, "SELECT count(*) FROM memory_items")[0][0],
        db_rows(home, "SELECT count(*) FROM memory_events")[0][0],
    )


def test_tools_are_listed_with_annotations_and_no_profile_argument(home: Path) -> None:
    async def script(session: ClientSession) -> Any:
        return (await session.list_tools()).tools

    tools = {t.name: t for t in serve(home, script)}
    assert set(tools) == {
        "write_memory",
        "memory_search",
        "memory_list",
        "memory_forget",
        "chat_search",
        "chat_recent",
        "context",
    }
    for name in ("memory_search", "memory_list", "chat_search", "chat_recent", "context"):
        assert tools[name].annotations.read_only_hint is True, name
    assert tools["write_memory"].annotations.read_only_hint is False
    assert tools["write_memory"].annotations.destructive_hint is False
    assert tools["memory_forget"].annotations.destructive_hint is True
    for tool in tools.values():
        assert "profile" not in json.dumps(tool.input_schema), tool.name
    assert set(tools["write_memory"].input_schema["required"]) == {"category", "topic", "label"}

    with_log = {t.name for t in serve(home, script, "--log-turns")}
    assert with_log == set(tools) | {"log_turn"}


def test_write_search_list_and_forget_over_mcp(home: Path) -> None:
    async def script(session: ClientSession) -> Any:
        wrote = await call(
            session,
            "write_memory",
            {
                "category": "preference",
                "topic": "coffee",
                "label": "Drinks flat whites with oat milk",
                "reason": "said so while planning the office order",
            },
        )
        again = await call(
            session,
            "write_memory",
            {
                "category": "preference",
                "topic": "coffee",
                "label": "Drinks flat whites with oat milk",
            },
        )
        found = await call(session, "memory_search", {"query": "oat milk"})
        listed = await call(session, "memory_list", {})
        ctx = await call(session, "context", {"message": "what coffee should I order for me?"})
        forgot = await call(session, "memory_forget", {"id": 1})
        after = await call(session, "memory_list", {})
        return wrote, again, found, listed, ctx, forgot, after

    wrote, again, found, listed, ctx, forgot, after = serve(home, script)
    assert wrote == (False, "stored memory #1")
    assert again[0] is False and again[1].startswith("reinforced memory #1")
    assert "#1" in found[1] and "oat milk" in found[1]
    assert "Drinks flat whites with oat milk" in listed[1]
    assert "Drinks flat whites with oat milk" in ctx[1] and "Current date and time" in ctx[1]
    assert forgot[0] is False and forgot[1].startswith("forgotten #1")
    assert after == (False, "no stored facts")

    item = db_rows(home, "SELECT * FROM memory_items")[0]
    assert item["source"] == "mcp" and item["status"] == "retracted"
    assert "claude-code-test 2.1.0" in item["reason"]
    note = db_rows(home, "SELECT * FROM turns WHERE id = ?", (item["source_turn_id"],))[0]
    assert note["role"] == "assistant" and note["profile"] == "default"
    assert note["status"] == "ok" and note["model"] == "claude-code-test 2.1.0"
    assert json.loads(note["meta"]) == {
        "source": "mcp",
        "client": "claude-code-test 2.1.0",
        "tool": "write_memory",
        "kind": "note",
    }
    assert "Drinks flat whites with oat milk" in note["content"]
    causes = [r["cause"] for r in db_rows(home, "SELECT cause FROM memory_events ORDER BY id")]
    assert causes[0].startswith("mcp: said so")
    assert causes[-1] == "retracted over MCP by claude-code-test 2.1.0"


def test_bad_arguments_are_tool_errors_and_store_nothing(home: Path) -> None:
    bad = [
        {"category": "hobby", "topic": "chess", "label": "Plays chess"},
        {"category": "fact", "topic": "chess"},
        {"category": "fact", "topic": "chess", "label": "Plays chess", "confidence": 2},
        {"category": "fact", "topic": "chess", "label": "   "},
        {"category": "fact", "topic": "!!!", "label": "???"},
        {"category": "open_item", "topic": "taxes", "label": "File taxes", "due": "someday"},
        {"category": "fact", "topic": "chess", "label": "x" * 501},
    ]

    async def script(session: ClientSession) -> Any:
        results = [await call(session, "write_memory", args) for args in bad]
        results.append(await call(session, "memory_forget", {"id": "one"}))
        results.append(await call(session, "memory_forget", {"id": 0}))
        results.append(await call(session, "memory_search", {"query": ""}))
        results.append(await call(session, "context", {"message": "   "}))
        results.append(await call(session, "chat_recent", {"limit": 10_000}))
        return results

    results = serve(home, script)
    for (is_error, text), args in zip(results, bad + [None] * 5, strict=True):
        assert is_error, (args, text)
        assert text and "Traceback" not in text and "\n" not in text, text
        for noise in ("validation error", "pydantic", "http", "Error executing tool"):
            assert noise not in text, text
    assert "category" in results[0][1]
    assert "label" in results[1][1]
    assert "confidence" in results[2][1]
    assert "content" in results[3][1]
    assert "someday" in results[5][1]
    assert counts(home) == (0, 0, 0)


def test_a_client_cannot_reach_another_profile(home: Path) -> None:
    added = run_rheo(
        "memory", "add", "Salary is confidential", "-t", "salary", "--profile", "work", "--json"
    )
    assert added.returncode == 0, added.stderr
    other_id = json.loads(added.stdout)["item"]["id"]

    async def script(session: ClientSession) -> Any:
        return (
            await call(session, "memory_forget", {"id": other_id}),
            await call(session, "memory_list", {"include_inactive": True}),
            await call(session, "memory_search", {"query": "salary"}),
            await call(session, "memory_forget", {"id": other_id, "profile": "work"}),
        )

    forget, listed, found, named = serve(home, script, env={"RHEO_PROFILE": "personal"})
    assert forget[0] is True and "no memory item" in forget[1]
    assert listed == (False, "no stored facts")
    assert found == (False, "no stored facts match")
    assert named[0] is True or "no memory item" in named[1]
    rows = db_rows(home, "SELECT profile, status FROM memory_items")
    assert [tuple(r) for r in rows] == [("work", "active")]


def test_the_profile_option_picks_the_profile(home: Path) -> None:
    async def script(session: ClientSession) -> Any:
        return await call(
            session, "write_memory", {"category": "team", "topic": "manager", "label": "Ana leads"}
        )

    assert serve(home, script, "--profile", "work")[0] is False
    assert [r[0] for r in db_rows(home, "SELECT profile FROM memory_items")] == ["work"]
    assert [r[0] for r in db_rows(home, "SELECT profile FROM turns")] == ["work"]


def test_context_is_what_rheo_context_assembles(home: Path) -> None:
    assert (
        run_rheo(
            "memory", "add", "Daughter Arowyn starts school in Lyon", "-t", "arowyn school"
        ).returncode
        == 0
    )
    preview = run_rheo("context", "--json", "when does Arowyn start school?")
    sections = json.loads(preview.stdout)["sections"]
    assert sections

    async def script(session: ClientSession) -> Any:
        return await call(session, "context", {"message": "when does Arowyn start school?"})

    is_error, text = serve(home, script)
    assert not is_error
    for section in sections:
        assert section["text"] in text
    assert "when does Arowyn start school?" not in text
    assert counts(home)[0] == 0  # nothing stored


def test_log_turns_records_the_clients_exchange(home: Path) -> None:
    async def script(session: ClientSession) -> Any:
        return (
            await call(
                session, "log_turn", {"role": "user", "content": "My bike is a blue Brompton."}
            ),
            await call(
                session,
                "log_turn",
                {"role": "assistant", "content": "Noted, a blue Brompton.", "model": "claude-x"},
            ),
            await call(session, "log_turn", {"role": "system", "content": "be nice"}),
            await call(session, "chat_search", {"query": "Brompton"}),
            await call(session, "chat_recent", {"limit": 5}),
        )

    user, reply, system, found, recent = serve(home, script, "--log-turns")
    assert user[0] is False and reply[0] is False and "extracted" in reply[1]
    assert reply[1].endswith("by 'rheo maintain'")  # the suite runs with RHEO_WORKER=off
    assert system[0] is True
    assert "blue Brompton" in found[1] and "#1" in found[1]
    assert recent[1].index("My bike") < recent[1].index("Noted")
    turns = db_rows(home, "SELECT role, model, status, meta, session_id FROM turns ORDER BY id")
    assert [(t["role"], t["model"], t["status"]) for t in turns] == [
        ("user", None, None),
        ("assistant", "claude-x", "ok"),
    ]
    assert turns[0]["session_id"] == turns[1]["session_id"]
    assert json.loads(turns[0]["meta"])["client"] == "claude-code-test 2.1.0"
    job = db_rows(home, "SELECT kind, ref_id, status FROM jobs")
    assert [tuple(j) for j in job] == [("extract", 2, "pending")]


def test_a_reply_logged_again_is_stored_once(home: Path) -> None:
    """A host that got no answer for a reply (its rheo mcp was killed) and logs it again with
    the same reply_to gets the stored turn back; a different reply to it is stored."""

    async def script(session: ClientSession) -> Any:
        user = await call(session, "log_turn", {"role": "user", "content": "I moved to Porto."})
        question = int(user[1].split("reply_to ")[1].split()[0])
        reply = {"role": "assistant", "content": "Porto, lovely.", "reply_to": question}
        return (
            await call(session, "log_turn", reply),
            await call(session, "log_turn", reply),
            await call(session, "log_turn", {**reply, "content": "And the river!"}),
        )

    first, again, other = serve(home, script, "--log-turns")
    assert first[0] is False and "the reply to #1" in first[1]
    assert again == (
        False,
        "already stored as turn #2 in session s1, the reply to #1; not stored again",
    )
    assert other[0] is False and "stored turn #3" in other[1]
    turns = db_rows(home, "SELECT id, role, content FROM turns ORDER BY id")
    assert [tuple(t) for t in turns] == [
        (1, "user", "I moved to Porto."),
        (2, "assistant", "Porto, lovely."),
        (3, "assistant", "And the river!"),
    ]
    jobs = db_rows(home, "SELECT kind, ref_id FROM jobs ORDER BY id")
    assert [tuple(j) for j in jobs] == [("extract", 2), ("extract", 3)]


def test_log_turn_is_offered_only_when_asked(home: Path) -> None:
    async def script(session: ClientSession) -> Any:
        return await call(session, "log_turn", {"role": "user", "content": "hello"})

    is_error, _ = serve(home, script)
    assert is_error
    assert counts(home) == (0, 0, 0)


def test_other_commands_never_import_the_sdk(home: Path) -> None:
    code = (
        "import sys; from rheo_cli.cli.main import app\n"
        "for args in (['--help'], ['mcp', '--help'], ['import-history', '--help']):\n"
        "    try:\n"
        "        app(args, prog_name='rheo')\n"
        "    except SystemExit as e:\n"
        "        assert e.code in (0, None), (args, e.code)\n"
        "print('LOADED', [m for m in ('mcp', 'pydantic') if m in sys.modules])\n"
    )
    env = netguard.subprocess_env({**os.environ, "RHEO_HOME": str(home)})
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=env, cwd=str(REPO), timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().strip().endswith("LOADED []")


def test_without_the_sdk_rheo_mcp_says_how_to_install_it(home: Path, tmp_path: Path) -> None:
    hidden = tmp_path / "no-sdk" / "mcp"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('not installed here')\n")
    env = {**os.environ, "PYTHONPATH": str(hidden.parent)}
    done = run_rheo("mcp", env=env)
    assert done.returncode == 2
    hint = install_hint("mcp")  # how the README installs: from rheo's folder, not PyPI
    assert done.stderr.decode() == f"rheo: rheo mcp needs the MCP SDK: {hint}\n"
    assert "rheo-cli[" not in hint and hint.endswith("[mcp]'")


RAW_INIT = mcp_initialize(0, "raw")
"""The initialize request a raw client sends first (id 0)."""


def run_to_eof(home: Path, lines: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """``rheo mcp`` given ``lines`` on stdin, which then closes; its answers and stderr."""
    env = netguard.subprocess_env({**os.environ, "RHEO_HOME": str(home), "RHEO_WORKER": "off"})
    return subprocess.run(
        [sys.executable, "-m", "rheo_cli", "mcp"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        env=env,
        cwd=str(REPO),
        timeout=timeout,
    )


def raw_session(home: Path, lines: list[str]) -> tuple[list[dict[str, Any]], str]:
    """Send ``lines`` (JSON-RPC text, after initialize) to ``rheo mcp`` as a client would,
    then a ping; return every answer up to the ping's and what the server wrote on stderr."""
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    text = [json.dumps(RAW_INIT), json.dumps(initialized)]
    text += lines + [json.dumps({"jsonrpc": "2.0", "id": "last", "method": "ping"})]
    env = netguard.subprocess_env({**os.environ, "RHEO_HOME": str(home), "RHEO_WORKER": "off"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "rheo_cli", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(REPO),
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(("\n".join(text) + "\n").encode("utf-8", "surrogatepass"))
    proc.stdin.flush()
    answers = []
    while True:
        line = proc.stdout.readline()
        assert line, "rheo mcp ended before answering the ping"
        answers.append(json.loads(line))
        if answers[-1].get("id") == "last":
            break
    proc.stdin.close()
    proc.wait(timeout=30)
    return answers[1:-1], proc.stderr.read().decode()


def test_what_the_sdk_would_drop_is_answered(home: Path) -> None:
    """A line that is not JSON gets -32700; a request holding a lone surrogate gets -32602
    with its id; JSON that is not a JSON-RPC message gets -32600 (with its id when it has
    one), and so does a request whose id is not a string or an integer (which the SDK takes
    for a notification); an unknown prompt is -32602 (not the SDK's 0), logged in one
    line."""
    search = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "memory_search", "arguments": {"query": "\\ud800 tea"}},
    }
    prompt = {"jsonrpc": "2.0", "id": 8, "method": "prompts/get", "params": {"name": "nope"}}
    answers, stderr = raw_session(
        home,
        [
            "this is not json {",
            "[" * 100_000 + "]" * 100_000,  # deeper than Python reads JSON
            json.dumps(search).replace("\\\\ud800", "\\ud800"),
            "[1, 2]",
            json.dumps({"id": 10, "method": "ping"}),  # no "jsonrpc": "2.0"
            json.dumps({"jsonrpc": "2.0", "id": 11, "method": 5}),
            json.dumps({"jsonrpc": "2.0", "id": True, "method": "ping"}),
            json.dumps({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
            json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),  # passed on
            json.dumps(prompt),
        ],
    )
    assert [(a.get("id"), a["error"]["code"]) for a in answers] == [
        (None, -32700),
        (None, -32700),
        (7, -32602),
        (None, -32600),
        (10, -32600),
        (11, -32600),
        (None, -32600),
        (None, -32600),
        (8, -32602),
    ]
    assert answers[1]["error"]["message"] == "Parse error: JSON nested too deeply"
    assert "lone surrogate" in answers[2]["error"]["message"]
    assert answers[3]["error"]["message"] == "Invalid Request: not a JSON-RPC 2.0 message"
    assert answers[6]["error"]["message"] == (
        "Invalid Request: the id must be a string or an integer"
    )
    assert answers[-1]["error"]["message"] == "unknown prompt: nope"
    assert "Traceback" not in stderr and "│" not in stderr  # no boxed traceback
    assert all(line.startswith("rheo mcp: ") for line in stderr.splitlines()), stderr


def test_answers_to_the_last_lines_before_stdin_closes_are_not_lost(home: Path) -> None:
    """stdin closing right after lines rheo answers itself: every answer is written and
    rheo mcp ends cleanly (it used to lose them and die with a traceback)."""
    lines = [json.dumps(RAW_INIT), "not json", "[1, 2]"]
    done = run_to_eof(home, lines, timeout=60)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    # JSON-RPC lets answers come in any order (the SDK answers initialize, rheo the bad lines)
    got = sorted(((a["id"], a.get("error", {}).get("code")) for a in answers), key=repr)
    assert got == sorted([(0, None), (None, -32700), (None, -32600)], key=repr)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr


def test_requests_read_before_stdin_closes_are_all_answered(home: Path) -> None:
    """A client that writes its last requests and closes stdin (``printf ... | rheo mcp``)
    gets every answer — a write it asked for is made and answered — before rheo mcp ends."""
    write = {"category": "fact", "topic": "tea", "label": "Ana likes green tea"}
    calls = [
        ("tools/call", {"name": "write_memory", "arguments": write}),
        ("tools/call", {"name": "chat_recent", "arguments": {}}),
        ("tools/list", {}),
    ]
    lines = [
        json.dumps(RAW_INIT),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
    lines += [
        json.dumps({"jsonrpc": "2.0", "id": n, "method": method, "params": params})
        for n, (method, params) in enumerate(calls, start=1)
    ]
    done = run_to_eof(home, lines, timeout=120)
    answers = {json.loads(line)["id"]: json.loads(line) for line in done.stdout.splitlines()}
    assert sorted(answers) == [0, 1, 2, 3], done.stdout
    assert "stored memory #1" in json.dumps(answers[1])
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_tools_have_plain_descriptions_and_no_output_schema(home: Path) -> None:
    async def script(session: ClientSession) -> Any:
        listed = (await session.list_tools()).tools
        return listed, await session.call_tool("memory_list", {})

    tools, listed = serve(home, script)
    for tool in tools:
        assert tool.output_schema is None, tool.name
        assert not any(line.startswith(" ") for line in tool.description.splitlines()), tool.name
    assert listed.structured_content is None
    assert [c.text for c in listed.content] == ["no stored facts"]


def test_the_memory_engine_is_imported_on_the_first_tool_call(home: Path) -> None:
    code = (
        "import sys\n"
        "from rheo_cli.app.app import build\n"
        "from rheo_cli.mcpserver.server import build as server\n"
        "server(build())\n"
        "print(sorted(m for m in sys.modules if m.startswith(('rheo_cli.memory.facts.items',"
        " 'rheo_cli.app.tools.actions', 'rheo_cli.memory.context', 'anthropic'))))\n"
    )
    env = netguard.subprocess_env({**os.environ, "RHEO_HOME": str(home)})
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=env, cwd=str(REPO), timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().strip() == "[]"
    assert not (home / "rheo.db").exists()  # the store too waits for a tool call


def test_a_secret_the_person_asked_to_forget_never_reaches_an_mcp_client(
    home: Path, rheo: Any, fake_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fakeprovider import facts
    from helpers import route

    ssn = {"category": "fact", "topic": "ssn", "confidence": 0.9,
           "label": "Ana's social security number is 123-45-6789"}  # fmt: skip
    route(fake_model, chat="Noted.", extract=facts(ssn))
    monkeypatch.setenv("RHEO_NOW", "2026-05-04T09:00:00+01:00")
    assert rheo("ask", "My social security number is 123-45-6789.").exit_code == 0
    assert rheo("maintain").exit_code == 0
    assert "6789" in rheo("context", "my social security number").stdout
    route(fake_model, chat="Done.", extract=facts())
    forgot = rheo("ask", "Please forget my social security number.")
    assert "forgot #" in forgot.stderr
    assert rheo("ask", "What about dinner?").exit_code == 0

    async def script(session: ClientSession) -> Any:
        question = "what is my social security number?"
        return [
            await call(session, "context", {"message": question}),
            await call(session, "memory_search", {"query": "social security number"}),
            await call(session, "chat_search", {"query": "social security number"}),
            await call(session, "chat_recent", {}),
        ]

    answers = serve(home, script, env={"RHEO_NOW": "2026-05-04T10:00:00+01:00"})
    assert [is_error for is_error, _ in answers] == [False] * 4
    for _, text_ in answers:
        assert "6789" not in text_, text_
    assert "What about dinner?" in answers[3][1]  # the ledger's turns are listed
