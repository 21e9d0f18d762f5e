"""Helpers for tests: subprocess runs, direct database reads, request text."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import netguard

REPO = Path(__file__).resolve().parent.parent
_LOCOMO_PLACES = [
    Path(os.environ["RHEO_LOCOMO"]) if os.environ.get("RHEO_LOCOMO") else None,
    REPO.parent / "shared" / "bench" / "locomo10.json",  # beside the checkout, as on the dev box
    Path("/work/shared/bench/locomo10.json"),  # where CI's clean clone can still read it
]
LOCOMO = next((p for p in _LOCOMO_PLACES if p is not None and p.exists()), _LOCOMO_PLACES[1])
"""LoCoMo (CC BY-NC 4.0): read where it lies, never copied into the repository."""


def run_rheo(
    *args: str,
    input: bytes | str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m rheo_cli ARGS`` in a subprocess with the network guard installed.

    ``env`` is the whole environment when given (else this process's)."""
    full = netguard.subprocess_env(dict(os.environ) if env is None else env)
    data = input.encode() if isinstance(input, str) else input
    return subprocess.run(
        [sys.executable, "-m", "rheo_cli", *args],
        input=data,
        env=full,
        capture_output=True,
        timeout=timeout,
        cwd=str(REPO),
    )


def db_rows(home: Path, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
    """Read rows straight from the test's database."""
    conn = sqlite3.connect(home / "rheo.db")
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def _system_texts(recorded: Any) -> list[str]:
    """The system blocks' text of a request: one the fake API recorded (its JSON body) or
    one the in-process fake model was asked (a ChatRequest)."""
    if hasattr(recorded, "body"):
        return [b["text"] for b in recorded.body.get("system", []) if isinstance(b, dict)]
    return [block.text for block in recorded.system]


def _messages(recorded: Any) -> list[dict[str, Any]]:
    return recorded.body["messages"] if hasattr(recorded, "body") else recorded.messages


def request_text(recorded: Any) -> str:
    """All text the request carried (recorded by the fake API, or a ChatRequest the fake
    model was asked): system blocks and every message's text blocks."""
    parts = _system_texts(recorded)
    for msg in _messages(recorded):
        content = msg["content"]
        if isinstance(content, str):
            parts.append(content)
            continue
        for block in content:
            if block.get("type") == "text":
                parts.append(block["text"])
    return "\n".join(parts)


def kind_of(recorded: Any) -> str:
    """``"extract"``, ``"digest"``, ``"consolidate"`` or ``"chat"``: which of rheo's calls a
    request is (recorded by the fake API, or a ChatRequest the fake model was asked)."""
    system = " ".join(_system_texts(recorded))
    if system.startswith("You extract durable facts"):
        return "extract"
    if system.startswith("You summarise one finished"):
        return "digest"
    if system.startswith("You review the facts"):
        return "consolidate"
    return "chat"


def route(
    model: Any,
    *,
    chat: Any = None,
    extract: Any = None,
    digest: Any = None,
    consolidate: Any = None,
) -> None:
    """Answer chat, extraction, digest and consolidation calls differently, on the fake API
    (answers are `fakeapi` Replies) or the in-process fake model (answers are `Canned` or
    text). Each answer is a reply, a list of replies (used in order, the last one repeating)
    or a callable ``(request) -> reply``; unset, a reply with nothing in it."""
    from fakeprovider import FakeProvider

    if isinstance(model, FakeProvider):
        from fakeprovider import Canned as make
    else:
        from fakeapi import text as make

    def pick(answer: Any, default: Any, rec: Any, counts: dict[str, int], key: str) -> Any:
        if answer is None:
            return default
        if callable(answer):
            return answer(rec)
        if isinstance(answer, list):
            n = counts.get(key, 0)
            counts[key] = n + 1
            return answer[min(n, len(answer) - 1)]
        return answer

    counts: dict[str, int] = {}

    def handler(rec: Any) -> Any:
        kind = kind_of(rec)
        if kind == "extract":
            return pick(extract, make('{"facts": []}'), rec, counts, kind)
        if kind == "digest":
            return pick(
                digest, make('{"narrative": "A short chat.", "facts": []}'), rec, counts, kind
            )
        if kind == "consolidate":
            return pick(consolidate, make('{"actions": []}'), rec, counts, kind)
        return pick(chat, make("ok"), rec, counts, kind)

    model.handler = handler


def facts_reply(*facts: dict[str, Any]) -> Any:
    """An extractor reply of the fake API carrying these facts: the forced ``record_facts``
    tool call, as the real API answers (or JSON text when the request forces no tool). For
    the in-process fake model: `fakeprovider.facts`."""
    from fakeapi import structured

    return structured({"facts": list(facts)})


def api_env(api: Any, home: Path, **extra: str) -> dict[str, str]:
    """This process's environment for a rheo subprocess talking to the fake API ``api`` with
    RHEO_HOME ``home``; RHEO_WORKER is left unset (spawn) unless ``extra`` sets it."""
    env = {k: v for k, v in os.environ.items() if k != "RHEO_WORKER"}
    env.update(
        ANTHROPIC_BASE_URL=api.base_url, ANTHROPIC_API_KEY="test-key", RHEO_HOME=str(home), **extra
    )
    return env


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (read from /proc)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {p for p, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def mcp_initialize(request_id: int = 1, client: str = "test") -> dict[str, Any]:
    """The ``initialize`` request an MCP client sends first."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": client, "version": "1"},
        },
    }


def mcp_session(*messages: dict[str, Any]) -> str:
    """An MCP client's session as stdin text: ``initialize`` (id 1), ``initialized``, then
    ``messages``, one JSON line each."""
    import json

    whole = [mcp_initialize(), {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    return "".join(json.dumps(m) + "\n" for m in [*whole, *messages])
