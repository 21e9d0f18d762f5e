"""``rheo mcp`` over stdio: the SDK's own transport, with the requests it would drop without
an answer answered by rheo first.

The MCP SDK (2.3) reads one JSON-RPC message a line and silently drops a line that is not
JSON (JSON-RPC asks for a ``-32700`` parse error), a request whose text holds a lone
surrogate (``"\\ud800"``: valid JSON, no valid Unicode) and JSON that is not a JSON-RPC
message (``[1, 2]``, a request without ``"jsonrpc": "2.0"``; JSON-RPC asks for ``-32600``),
and it takes a request whose id is neither a string nor an integer (``true``, ``1.5``,
``null``) for a notification, so a client waits for an answer that never comes. `screen`
looks at each line first; `serve_stdio` answers those itself and hands every other line to
the SDK unchanged.

When stdin closes, the SDK stops its handlers at once: a client that writes its last requests
and closes stdin (``printf ... | rheo mcp``) lost their answers though their writes were made.
So the end of stdin reaches the SDK only once every request read has been answered (or after
`DRAIN_S`): `_ScreenedLines` counts the requests it passes on, and `serve_stdio` sees each
answer go out.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from io import TextIOWrapper
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

DRAIN_S = 60.0
"""How long (seconds) the requests read before stdin closed may take to be answered."""


def _has_lone_surrogate(value: Any) -> bool:
    if isinstance(value, str):
        return any(0xD800 <= ord(ch) <= 0xDFFF for ch in value)
    if isinstance(value, dict):
        return any(_has_lone_surrogate(k) or _has_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_lone_surrogate(v) for v in value)
    return False


def _usable_id(value: Any) -> bool:
    """An id MCP allows: a string or an integer (not a boolean, a fraction or null)."""
    return isinstance(value, int | str) and not isinstance(value, bool)


def screen(line: str) -> dict[str, Any] | None:
    """`_screen`, with JSON nested deeper than Python reads answered ``-32700`` (id null)."""
    try:
        return _screen(line)
    except RecursionError:
        return {"code": PARSE_ERROR, "message": "Parse error: JSON nested too deeply", "id": None}


def _screen(line: str) -> dict[str, Any] | None:
    """The error answer rheo sends for ``line`` instead of passing it on, or None to pass it:
    ``-32700`` (id null) for a line that is not JSON, ``-32602`` with the request's id for a
    request holding a lone surrogate, ``-32600`` for JSON the SDK cannot take as a JSON-RPC
    message (with its id when it has a usable one, else null) and for a request whose id is
    not a string or an integer (id null). Blank lines and notifications with a lone surrogate
    get no answer (there is no id to answer), and are not passed either: ``{}``."""
    if not line.strip():
        return {}
    try:
        message = json.loads(line)
    except ValueError:
        return {"code": PARSE_ERROR, "message": "Parse error: the line is not JSON", "id": None}
    ident = message.get("id") if isinstance(message, dict) else None
    if _has_lone_surrogate(message):
        if not _usable_id(ident):
            return {}
        return {
            "code": INVALID_PARAMS,
            "message": "Invalid params: the text holds a lone surrogate (U+D800-U+DFFF), "
            "which is not Unicode text",
            "id": ident,
        }
    if (
        isinstance(message, dict)
        and "method" in message
        and "id" in message
        and not (_usable_id(ident))
    ):
        return {
            "code": INVALID_REQUEST,
            "message": "Invalid Request: the id must be a string or an integer",
            "id": None,
        }
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError:
        return {
            "code": INVALID_REQUEST,
            "message": "Invalid Request: not a JSON-RPC 2.0 message",
            "id": ident if _usable_id(ident) else None,
        }
    return None


class _ScreenedLines:
    """The lines of stdin, without those `screen` answers. Each answer is written out before
    the next line is read (`answer_to`, set once the output stream exists), so it comes
    before the answers to later requests and none is lost when stdin closes."""

    def __init__(self) -> None:
        raw = TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
        self._lines = anyio.wrap_file(raw)
        self._ready = anyio.Event()
        self._write: Callable[[SessionMessage], Awaitable[None]] | None = None
        self._pending: set[Any] = set()
        self._answered = anyio.Event()

    def sent(self, message: SessionMessage) -> None:
        """Note that ``message`` went out: an answer settles its request."""
        root = getattr(message.message, "root", message.message)
        if isinstance(root, JSONRPCResponse | JSONRPCError):
            self._pending.discard(root.id)
            self._answered.set()

    def answer_to(self, write: Callable[[SessionMessage], Awaitable[None]]) -> None:
        """Write the answers with ``write`` (the SDK's output stream)."""
        self._write = write
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._lines:
            answer = screen(line)
            if answer is None:
                self._pending |= _request_id(line)
                yield line
            elif answer:
                await self._ready.wait()
                assert self._write is not None
                error = ErrorData(code=answer["code"], message=answer["message"])
                reply = JSONRPCError(jsonrpc="2.0", id=answer["id"], error=error)
                with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                    await self._write(SessionMessage(reply))
        # stdin closed: what was asked is answered before the SDK sees the end
        with anyio.move_on_after(DRAIN_S):
            while self._pending:
                await self._answered.wait()
                self._answered = anyio.Event()


def _request_id(line: str) -> set[Any]:
    """``{id}`` of the request ``line`` holds (a line `screen` passed), else ``set()``."""
    message = json.loads(line)
    if isinstance(message, dict) and "method" in message and "id" in message:
        return {message["id"]}
    return set()


async def serve_stdio(server: MCPServer) -> None:
    """Run ``server`` on stdin/stdout until the client closes stdin."""
    lines = _ScreenedLines()
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        lines.answer_to(write_stream.send)
        send, outgoing = anyio.create_memory_object_stream[SessionMessage](0)

        async def forward() -> None:
            async with outgoing:
                async for message in outgoing:
                    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                        await write_stream.send(message)
                    lines.sent(message)
            await write_stream.aclose()  # as the SDK would have: stdout is done

        lowlevel = server._lowlevel_server
        async with anyio.create_task_group() as group:
            group.start_soon(forward)
            async with send:  # closed at the end (the SDK closes it too): forward() ends
                await lowlevel.run(read_stream, send, lowlevel.create_initialization_options())
