"""``log_turn`` pairs each reply with its own client's message: two real ``rheo mcp
--log-turns`` processes on one profile, each driven by the official SDK's stdio client, log
interleaved exchanges; every reply must answer its own client's question, and fact extraction
must be queued on those pairs only."""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import netguard
import pytest
from helpers import REPO, db_rows

pytest.importorskip("mcp")

pytestmark = pytest.mark.boundary  # every test here drives a rheo mcp subprocess

from mcp import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402
from mcp.types import Implementation  # noqa: E402

EXCHANGES = 40
"""Exchanges each client logs (80 replies in all, as the hostile run had)."""


def serve_many(
    home: Path,
    clients: list[tuple[str, list[str]]],
    script: Callable[[dict[str, ClientSession]], Awaitable[Any]],
) -> Any:
    """Start one ``rheo mcp --log-turns ARGS`` process per ``(name, args)`` in ``clients``,
    connect the SDK's client to each (clientInfo named NAME), and run ``script`` with the
    connected sessions by name."""
    env = netguard.subprocess_env(
        {
            "RHEO_HOME": str(home),
            "RHEO_WORKER": "off",
            "HOME": str(home.parent),
            "PATH": os.environ.get("PATH", ""),
        }
    )
    out: dict[str, Any] = {}

    async def main() -> None:
        with anyio.fail_after(120), open(os.devnull, "w") as errlog:
            async with contextlib.AsyncExitStack() as stack:
                sessions = {}
                for name, args in clients:
                    params = StdioServerParameters(
                        command=sys.executable,
                        args=["-m", "rheo_cli", "mcp", "--log-turns", *args],
                        env=env,
                        cwd=str(REPO),
                    )
                    read, write = await stack.enter_async_context(
                        stdio_client(params, errlog=errlog)
                    )
                    session = await stack.enter_async_context(
                        ClientSession(
                            read, write, client_info=Implementation(name=name, version="1")
                        )
                    )
                    await session.initialize()
                    sessions[name] = session
                out["value"] = await script(sessions)

    anyio.run(main)
    return out["value"]


async def call(session: ClientSession, args: dict[str, Any]) -> tuple[bool, str]:
    result = await session.call_tool("log_turn", args)
    text = "\n".join(c.text for c in result.content if getattr(c, "text", None) is not None)
    return bool(result.is_error), text


def schedule(seed: int) -> list[tuple[str, int, str]]:
    """Both clients' turns (client, exchange, role) in one random order that keeps each
    client's own order: its message, then its reply, exchange after exchange."""
    rng = random.Random(seed)
    queues = {c: [(c, n, r) for n in range(EXCHANGES) for r in ("user", "assistant")] for c in "AB"}
    order = []
    while queues["A"] or queues["B"]:
        client = rng.choice([c for c in "AB" if queues[c]])
        order.append(queues[client].pop(0))
    return order


def pairing(home: Path) -> dict[str, int]:
    """How the stored replies pair: right (their own client's question of the same
    exchange), crossed (another question), unpaired (none); and extraction jobs queued on a
    reply that is not paired right."""
    turns = {
        r["id"]: (r["role"], r["content"], json.loads(r["meta"]))
        for r in db_rows(home, "SELECT id, role, content, meta FROM turns")
    }
    tally = {"right": 0, "crossed": 0, "unpaired": 0, "jobs": 0, "jobs_on_wrong_pairs": 0}
    wrong: set[int] = set()
    for tid, (role, content, meta) in turns.items():
        if role != "assistant":
            continue
        question = meta.get("reply_to")
        if question is None:
            tally["unpaired"] += 1
            wrong.add(tid)
        elif turns[question][1] == content.replace("reply", "question"):
            tally["right"] += 1
        else:
            tally["crossed"] += 1
            wrong.add(tid)
    for (ref,) in db_rows(home, "SELECT ref_id FROM jobs WHERE kind = 'extract'"):
        tally["jobs"] += 1
        tally["jobs_on_wrong_pairs"] += ref in wrong
    return tally


@pytest.mark.parametrize("explicit", [False, True], ids=["own-conversation", "reply_to"])
def test_two_clients_logging_at_once_each_pair_their_own_turns(home: Path, explicit: bool) -> None:
    order = schedule(seed=18)

    async def script(sessions: dict[str, ClientSession]) -> list[tuple[bool, str]]:
        asked: dict[tuple[str, int], int] = {}
        results = []
        for client, n, role in order:
            args: dict[str, Any] = {
                "role": role,
                "content": f"{client}-{n} {'question' if role == 'user' else 'reply'}",
            }
            if role == "assistant" and explicit:
                args["reply_to"] = asked[(client, n)]
            result = await call(sessions[client], args)
            results.append(result)
            if role == "user":
                asked[(client, n)] = int(re.search(r"#(\d+)", result[1]).group(1))
        return results

    results = serve_many(home, [("A", []), ("B", [])], script)
    assert [r for r in results if r[0]] == []  # no call refused
    tally = pairing(home)
    print(f"two MCP clients, {2 * EXCHANGES} replies: {tally}")  # for RELIABILITY.md
    assert tally == {
        "right": 2 * EXCHANGES,
        "crossed": 0,
        "unpaired": 0,
        "jobs": 2 * EXCHANGES,
        "jobs_on_wrong_pairs": 0,
    }
    # A reply joins its question's session, and each turn names its connection.
    rows = db_rows(home, "SELECT id, session_id, meta FROM turns")
    session = {r["id"]: r["session_id"] for r in rows}
    metas = [json.loads(r["meta"]) for r in rows]
    assert all(
        session[m["reply_to"]] == session[r["id"]]
        for r, m in zip(rows, metas, strict=True)
        if "reply_to" in m
    )
    conversations = {m["client"]: set() for m in metas}
    for m in metas:
        conversations[m["client"]].add(m["conversation"])
    assert len(conversations["A 1"]) == len(conversations["B 1"]) == 1
    assert conversations["A 1"] != conversations["B 1"]


def test_reply_to_must_name_a_message_of_this_profile(home: Path) -> None:
    async def script(sessions: dict[str, ClientSession]) -> dict[str, Any]:
        mine, work = sessions["mine"], sessions["work"]
        got: dict[str, Any] = {}
        got["work_question"] = await call(work, {"role": "user", "content": "salary talk"})
        got["question"] = await call(mine, {"role": "user", "content": "I sold my van."})
        question = int(re.search(r"#(\d+)", got["question"][1]).group(1))
        got["reply"] = await call(
            mine, {"role": "assistant", "content": "Noted.", "reply_to": question}
        )
        reply = int(re.search(r"#(\d+)", got["reply"][1]).group(1))
        note = await mine.call_tool(
            "write_memory", {"category": "fact", "topic": "van", "label": "Sold the van"}
        )
        assert not note.is_error
        got["before"] = db_rows(home, "SELECT count(*) FROM turns")[0][0]
        work_id = int(re.search(r"#(\d+)", got["work_question"][1]).group(1))
        note_id = db_rows(home, "SELECT max(id) FROM turns")[0][0]
        got["refused"] = [
            await call(mine, {"role": "assistant", "content": "x", "reply_to": work_id}),
            await call(mine, {"role": "assistant", "content": "x", "reply_to": reply}),
            await call(mine, {"role": "assistant", "content": "x", "reply_to": 999_999}),
            await call(mine, {"role": "assistant", "content": "x", "reply_to": note_id}),
            await call(mine, {"role": "user", "content": "x", "reply_to": question}),
        ]
        got["after"] = db_rows(home, "SELECT count(*) FROM turns")[0][0]
        got["orphan"] = await call(mine, {"role": "assistant", "content": "Anything else?"})
        return got

    got = serve_many(home, [("mine", []), ("work", ["--profile", "work"])], script)
    assert got["reply"][0] is False and "the reply to #" in got["reply"][1]
    refused = got["refused"]
    assert all(is_error for is_error, _ in refused), refused
    assert all("\n" not in text and "Traceback" not in text for _, text in refused), refused
    assert "which this profile does not have" in refused[0][1]  # another profile's turn
    assert "a reply" in refused[1][1]
    assert "which this profile does not have" in refused[2][1]
    assert "note rheo wrote for a memory" in refused[3][1]
    assert "reply_to is for a reply" in refused[4][1]
    assert got["after"] == got["before"]  # nothing stored by a refused call
    # A reply with no message of its conversation waiting is stored, unpaired, unextracted.
    assert got["orphan"][0] is False and "not paired" in got["orphan"][1]
    orphan = db_rows(home, "SELECT id, meta FROM turns ORDER BY id DESC LIMIT 1")[0]
    assert "reply_to" not in json.loads(orphan["meta"])
    jobs = db_rows(home, "SELECT ref_id FROM jobs WHERE kind = 'extract'")
    assert [j[0] for j in jobs] == [int(re.search(r"#(\d+)", got["reply"][1]).group(1))]
    assert [
        r[0] for r in db_rows(home, "SELECT profile FROM turns WHERE content = 'salary talk'")
    ] == ["work"]
