"""``rheo mcp`` over stdio: the SDK's own transport, with the requests it would drop without
an answer answered by rheo first.

The MCP SDK (2.3) reads one JSON-RPC message a line and silently drops a line that is not
JSON (JSON-RPC asks for a ``-32700`` parse error) and a request whose text holds a lone
surrogate (``"\\ud800"``: valid JSON, no valid Unicode), so a client waits for an answer that
never comes. `screen` looks at each line first; `serve_stdio` answers those itself and hands
every other line to the SDK unchanged.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from io import TextIOWrapper
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_PARAMS, PARSE_ERROR, ErrorData, JSONRPCError


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any(0xD800 <= ord(ch) <= 0xDFFF for ch in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def screen(line: str) -> dict[str, Any] | None:
    """The error answer rheo sends for ``line`` instead of passing it on, or None to pass it:
    ``-32700`` (id null) for a line that is not JSON, ``-32602`` with the request's id for a
    request holding a lone surrogate. Blank lines and notifications with a lone surrogate
    get no answer (there is no id to answer), and are not passed either: ``{}``."""
    if not line.strip():
        return {}
    try:
        message = json.loads(line)
    except ValueError:
        return {"code": PARSE_ERROR, "message": "Parse error: the line is not JSON", "id": None}
    if not _has_lone_surrogate(message):
        return None
    ident = message.get("id") if isinstance(message, dict) else None
    if ident is None or isinstance(ident, bool) or not isinstance(ident, int | str):
        return {}
    return {
        "code": INVALID_PARAMS,
        "message": "Invalid params: the text holds a lone surrogate (U+D800-U+DFFF), "
        "which is not Unicode text",
        "id": ident,
    }


class _ScreenedLines:
    """The lines of stdin, without those `screen` answers; their answers are queued."""

    def __init__(self, answers: anyio.abc.ObjectSendStream[dict[str, Any]]) -> None:
        raw = TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
        self._lines = anyio.wrap_file(raw)
        self._answers = answers

    async def __aiter__(self) -> AsyncIterator[str]:
        async with self._answers:
            async for line in self._lines:
                answer = screen(line)
                if answer is None:
                    yield line
                elif answer:
                    await self._answers.send(answer)


async def serve_stdio(server: MCPServer) -> None:
    """Run ``server`` on stdin/stdout until the client closes stdin."""
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](16)
    lines = _ScreenedLines(send)
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]

        async def answer_screened() -> None:
            async with receive:
                async for answer in receive:
                    error = ErrorData(code=answer["code"], message=answer["message"])
                    reply = JSONRPCError(jsonrpc="2.0", id=answer["id"], error=error)
                    await write_stream.send(SessionMessage(reply))

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(answer_screened)
            lowlevel = server._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
            tasks.cancel_scope.cancel()
