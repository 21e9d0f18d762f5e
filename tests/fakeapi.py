"""A local, test-only HTTP server that speaks Anthropic's Messages API.

The real ``anthropic`` SDK can be pointed at it (``base_url=api.base_url``) so that client
code is exercised end to end -- HTTP, SSE parsing, retries, timeouts -- without network.

Standard library only. Typical use::

    with FakeAnthropic() as api:
        api.queue(text("Hello!"), tool_use("search", {"q": "x"}), error(529, ...))
        client = anthropic.Anthropic(base_url=api.base_url, api_key="test-key")
        ...
        assert api.last.body["model"] == "claude-test"

Every request is recorded in ``api.requests``. Each ``POST /v1/messages`` consumes one reply
from the FIFO filled by ``api.queue(...)``; when it is empty ``api.handler(recorded)`` decides
(by default it returns ``api.default``, initially ``text("ok")``). Whether the reply is sent as
a JSON ``Message`` or as a Server-Sent-Events stream depends on the request's ``"stream"`` flag,
so the same scripted reply works for both ``messages.create`` and ``messages.stream``.

Requests to ``/v1/messages`` are checked the way the real API checks them (required fields,
non-empty content, ``tool_use``/``tool_result`` pairing, tool names); a request that fails is
answered with 400 ``invalid_request_error`` *without* consuming a queued reply. Pass
``FakeAnthropic(validate=False)`` to turn that off.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, Self
from urllib.parse import urlsplit

__all__ = [
    "DEFAULT_USAGE",
    "FakeAnthropic",
    "Recorded",
    "Reply",
    "drop",
    "error",
    "hang",
    "malformed",
    "multi",
    "stream_error",
    "structured",
    "text",
    "tool_use",
    "validate_messages_request",
]

DEFAULT_USAGE: Mapping[str, int] = {
    "input_tokens": 10,
    "output_tokens": 5,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}
"""Usage reported for every message; a reply's ``usage=`` overrides individual keys."""

DEFAULT_MODEL = "claude-test-model"
"""Model echoed back when neither the request nor the reply names one."""

MESSAGES_PATH = "/v1/messages"
MODELS_PATH = "/v1/models"

_REASONS = {529: "Overloaded"}
_ERROR_TYPE_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}
_TOOL_NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")

ReplyKind = Literal["message", "error", "drop", "stream_error", "truncate", "malformed"]


# --------------------------------------------------------------------------------------
# Replies
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    """One scripted response. Build it with :func:`text`, :func:`tool_use`, :func:`multi`,
    :func:`error`, :func:`drop`, :func:`stream_error` or :func:`hang` rather than directly.

    ``kind`` is ``"message"`` (a normal assistant message made of ``blocks``), ``"error"``
    (an HTTP error ``status`` with a JSON error body), ``"drop"`` (connection closed mid-way)
    or ``"stream_error"`` (an SSE ``error`` event after some text). ``blocks`` are content
    blocks in API shape (``{"type": "text", "text": ...}``, ``{"type": "tool_use", "id":
    str | None, "name": ..., "input": {...}}``, ``{"type": "thinking", ...}``); a tool_use
    ``id`` of None gets a fresh ``toolu_...`` id each time the reply is sent, so a reply can
    be reused (e.g. as ``api.default``). Replies are immutable and may be sent many times.
    """

    kind: ReplyKind
    blocks: tuple[Mapping[str, Any], ...] = ()
    stop_reason: str | None = "end_turn"
    usage: Mapping[str, int] = field(default_factory=dict)
    model: str | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    chunks: tuple[str, ...] | int | None = None
    status: int = 200
    error_type: str = ""
    error_message: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    after_chunks: int = 0

    def resolved_usage(self) -> dict[str, int]:
        """``DEFAULT_USAGE`` with this reply's overrides applied."""
        return {**DEFAULT_USAGE, **self.usage}


def _check_chunks(s: str, chunks: Sequence[str] | int | None) -> tuple[str, ...] | int | None:
    if chunks is None:
        return None
    if isinstance(chunks, int):
        if chunks < 1:
            raise ValueError(f"chunks must be >= 1, got {chunks}")
        return chunks
    pieces = tuple(chunks)
    if "".join(pieces) != s:
        raise ValueError(f"chunks {pieces!r} do not join up to the text {s!r}")
    return pieces


def text(
    s: str,
    *,
    chunks: Sequence[str] | int | None = None,
    stop_reason: str = "end_turn",
    usage: Mapping[str, int] | None = None,
    model: str | None = None,
    delay: float = 0.0,
    chunk_delay: float = 0.0,
) -> Reply:
    """An assistant message with a single text block ``s``.

    When streamed, the text is sent as ``text_delta`` events: ``chunks`` is either the exact
    list of pieces (must join up to ``s``), or an int number of roughly equal pieces; default
    3 pieces (fewer for very short text, none for ""). ``delay`` seconds are waited before the
    response starts (status line included); ``chunk_delay`` seconds between stream deltas.
    ``usage`` overrides keys of :data:`DEFAULT_USAGE`; ``model`` overrides the echoed model.
    """
    return Reply(
        kind="message",
        blocks=({"type": "text", "text": s},),
        stop_reason=stop_reason,
        usage=dict(usage or {}),
        model=model,
        delay=delay,
        chunk_delay=chunk_delay,
        chunks=_check_chunks(s, chunks),
    )


def tool_use(
    name: str,
    input: Mapping[str, Any],
    *,
    id: str | None = None,
    text_before: str = "",
    usage: Mapping[str, int] | None = None,
    model: str | None = None,
    delay: float = 0.0,
    chunk_delay: float = 0.0,
) -> Reply:
    """An assistant message calling tool ``name`` with ``input``; ``stop_reason="tool_use"``.

    If ``text_before`` is non-empty a text block precedes the tool_use block. ``id`` defaults
    to a fresh ``toolu_...`` per response. When streamed, the input is sent as an empty
    ``input_json_delta`` (as the real API does) followed by 2+ pieces of its JSON text.
    """
    blocks: list[Mapping[str, Any]] = []
    if text_before:
        blocks.append({"type": "text", "text": text_before})
    blocks.append({"type": "tool_use", "id": id, "name": name, "input": dict(input)})
    return Reply(
        kind="message",
        blocks=tuple(blocks),
        stop_reason="tool_use",
        usage=dict(usage or {}),
        model=model,
        delay=delay,
        chunk_delay=chunk_delay,
    )


FORCED_TOOL = "<forced tool>"
"""Placeholder name in a :func:`structured` reply: replaced by the tool the request forces."""


def structured(payload: Mapping[str, Any], *, usage: Mapping[str, int] | None = None) -> Reply:
    """The answer of a model made to call a tool (``tool_choice={"type": "tool", "name": N}``):
    one ``tool_use`` block for tool N with ``payload`` as its input and ``stop_reason
    "tool_use"``, as the real API answers a forced tool call. A request that forces no tool
    gets ``payload`` as JSON text instead (a model asked for JSON in the prompt)."""
    return Reply(
        kind="message",
        blocks=({"type": "tool_use", "id": None, "name": FORCED_TOOL, "input": dict(payload)},),
        stop_reason="tool_use",
        usage=dict(usage or {}),
    )


def _forced_tool(body: Any) -> str | None:
    choice = body.get("tool_choice") if isinstance(body, dict) else None
    if isinstance(choice, dict) and choice.get("type") == "tool":
        return str(choice.get("name"))
    return None


def _resolve_forced(reply: Reply, body: Any) -> Reply:
    """A :func:`structured` reply made concrete for the request ``body``."""
    if not any(b.get("name") == FORCED_TOOL for b in reply.blocks):
        return reply
    name = _forced_tool(body)
    blocks: list[Mapping[str, Any]] = []
    for b in reply.blocks:
        if b.get("name") != FORCED_TOOL:
            blocks.append(b)
        elif name is not None:
            blocks.append({**b, "name": name})
        else:
            blocks.append({"type": "text", "text": json.dumps(b["input"], ensure_ascii=False)})
    stop = "tool_use" if name is not None else "end_turn"
    return Reply(kind=reply.kind, blocks=tuple(blocks), stop_reason=stop, usage=reply.usage)


def multi(
    blocks: Sequence[Mapping[str, Any]],
    *,
    stop_reason: str | None = None,
    usage: Mapping[str, int] | None = None,
    model: str | None = None,
    delay: float = 0.0,
    chunk_delay: float = 0.0,
    chunks: int | None = None,
) -> Reply:
    """An assistant message with arbitrary content ``blocks``, in API shape.

    Supported block types: ``{"type": "text", "text": str}``, ``{"type": "tool_use",
    "name": str, "input": dict, "id"?: str}`` and ``{"type": "thinking", "thinking": str,
    "signature"?: str}``. ``stop_reason`` defaults to ``"tool_use"`` if any tool_use block is
    present, else ``"end_turn"``. ``chunks`` (int) sets how many deltas each text/thinking
    block is split into when streamed.
    """
    normalised: list[Mapping[str, Any]] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "text":
            normalised.append({"type": "text", "text": str(block["text"])})
        elif kind == "tool_use":
            normalised.append(
                {
                    "type": "tool_use",
                    "id": block.get("id"),
                    "name": str(block["name"]),
                    "input": dict(block.get("input", {})),
                }
            )
        elif kind == "thinking":
            normalised.append(
                {
                    "type": "thinking",
                    "thinking": str(block["thinking"]),
                    "signature": str(block.get("signature", "sig_fake")),
                }
            )
        else:
            raise ValueError(f"unsupported block type for multi(): {kind!r}")
    if stop_reason is None:
        has_tool = any(b["type"] == "tool_use" for b in normalised)
        stop_reason = "tool_use" if has_tool else "end_turn"
    return Reply(
        kind="message",
        blocks=tuple(normalised),
        stop_reason=stop_reason,
        usage=dict(usage or {}),
        model=model,
        delay=delay,
        chunk_delay=chunk_delay,
        chunks=_check_chunks("", chunks) if isinstance(chunks, int) else None,
    )


def error(
    status: int,
    err_type: str,
    message: str,
    *,
    headers: Mapping[str, str] | None = None,
    delay: float = 0.0,
) -> Reply:
    """An HTTP error response (same for streaming and non-streaming requests).

    Body: ``{"type": "error", "error": {"type": err_type, "message": message}}``. For 429,
    529 and 5xx a ``retry-after-ms: 1`` header is added (unless ``headers`` sets
    ``retry-after`` or ``retry-after-ms`` itself) so the SDK's automatic retries wait ~1 ms
    instead of its 0.5-8 s exponential backoff. ``headers`` are added to the response.
    """
    merged = {k.lower(): v for k, v in (headers or {}).items()}
    retryable = status == 429 or status >= 500
    if retryable and "retry-after" not in merged and "retry-after-ms" not in merged:
        merged["retry-after-ms"] = "1"
    return Reply(
        kind="error",
        stop_reason=None,
        status=status,
        error_type=err_type,
        error_message=message,
        headers=merged,
        delay=delay,
    )


def drop(text_before: str = "partial ", *, after_chunks: int = 1, delay: float = 0.0) -> Reply:
    """A connection that dies mid-response.

    Streaming: sends ``message_start``, ``content_block_start`` and ``after_chunks``
    ``text_delta`` events carrying ``text_before`` (split into that many pieces), then
    closes the connection without finishing the chunked body (no ``message_stop``), so the
    client sees an incomplete HTTP message. Non-streaming: the connection is closed without
    any response at all.
    """
    if after_chunks < 0:
        raise ValueError("after_chunks must be >= 0")
    return Reply(
        kind="drop",
        blocks=({"type": "text", "text": text_before},),
        stop_reason=None,
        after_chunks=after_chunks,
        delay=delay,
    )


def truncate(text_before: str = "partial ", *, after_chunks: int = 1) -> Reply:
    """Streaming only: some text, then a clean end of the HTTP body without ``message_delta``
    or ``message_stop`` (a proxy that cut the stream short). The SDK does not notice this by
    itself."""
    return Reply(
        kind="truncate",
        blocks=({"type": "text", "text": text_before},),
        after_chunks=max(1, after_chunks),
        stop_reason=None,
    )


def malformed(text_before: str = "partial ", *, after_chunks: int = 1) -> Reply:
    """Streaming: some text, then an SSE event whose data is not JSON, then a clean end of the
    body. Non-streaming: the connection is closed without a response."""
    return Reply(
        kind="malformed",
        blocks=({"type": "text", "text": text_before},),
        after_chunks=max(0, after_chunks),
        stop_reason=None,
    )


def stream_error(
    err_type: str = "overloaded_error",
    message: str = "Overloaded",
    *,
    text_before: str = "partial ",
    after_chunks: int = 1,
) -> Reply:
    """An error that happens after a stream has started (HTTP status already 200).

    Streaming: ``message_start``, ``content_block_start``, ``after_chunks`` text deltas of
    ``text_before``, then ``event: error`` with ``{"type": "error", "error": {...}}`` and a
    properly terminated body -- as the real API does for e.g. mid-stream overload.
    Non-streaming: an ordinary HTTP error whose status matches ``err_type`` (529 for
    overloaded_error, 500 for api_error, ...), with ``retry-after-ms: 1`` where retryable.
    """
    status = _ERROR_TYPE_STATUS.get(err_type, 500)
    base = error(status, err_type, message)
    return Reply(
        kind="stream_error",
        blocks=({"type": "text", "text": text_before},),
        stop_reason=None,
        status=status,
        error_type=err_type,
        error_message=message,
        headers=base.headers,
        after_chunks=after_chunks,
    )


def hang(seconds: float, s: str = "ok") -> Reply:
    """Wait ``seconds`` before sending anything, then reply with ``text(s)``.

    Use with a short client ``timeout=`` to provoke ``anthropic.APITimeoutError``. The wait is
    cut short when the server stops, so a hang never delays test teardown.
    """
    return text(s, delay=seconds)


# --------------------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------------------


@dataclass
class Recorded:
    """One request received by the server.

    ``headers`` has lower-cased keys (repeated headers joined with ", "); ``body`` is the
    parsed JSON (any JSON value, normally a dict) or None if absent/not JSON, with the raw
    bytes in ``raw``. ``path`` excludes the query string, which is in ``query``.
    ``received_at`` is ``time.monotonic()`` when the request was fully read. ``reply`` is the
    Reply chosen for it (None for non-message paths answered with 404).
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float
    query: str = ""
    raw: bytes = b""
    reply: Reply | None = None
    connected_at: float = 0.0
    """``time.monotonic()`` when the server accepted the connection the request came on."""

    @property
    def api_key(self) -> str | None:
        """The credential sent: ``x-api-key``, else the token of ``authorization: Bearer ...``.

        (anthropic SDK 2.x sends ``api_key=`` as a Bearer token, older ones as x-api-key.)
        """
        if self.headers.get("x-api-key"):
            return self.headers["x-api-key"]
        scheme, _, token = self.headers.get("authorization", "").partition(" ")
        return token if scheme.lower() == "bearer" and token else None

    @property
    def stream(self) -> bool:
        """True if the body asked for a streamed response (``"stream": true``)."""
        return isinstance(self.body, dict) and self.body.get("stream") is True


# --------------------------------------------------------------------------------------
# Request validation (a subset of what the real API rejects)
# --------------------------------------------------------------------------------------


def _tool_use_ids(content: Any) -> list[str]:
    if not isinstance(content, list):
        return []
    return [
        str(b.get("id"))
        for b in content
        if isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use")
    ]


def _validate_content(i: int, msg: dict[str, Any], is_last: bool) -> str | None:
    content = msg.get("content")
    final_assistant = is_last and msg.get("role") == "assistant"
    if isinstance(content, str):
        if not content and not final_assistant:
            return (
                f"messages.{i}: all messages must have non-empty content except for the "
                "optional final assistant message"
            )
        if final_assistant and content and content != content.rstrip():
            return "messages: final assistant content cannot end with trailing whitespace"
        return None
    if not isinstance(content, list):
        return f"messages.{i}.content: Input should be a valid string or list"
    if not content and not final_assistant:
        return (
            f"messages.{i}: all messages must have non-empty content except for the "
            "optional final assistant message"
        )
    seen_other = False
    for j, block in enumerate(content):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            return f"messages.{i}.content.{j}: Input should be an object with a 'type'"
        kind = block["type"]
        if kind == "text" and not block.get("text"):
            return "messages: text content blocks must be non-empty"
        if kind == "tool_result":
            if msg.get("role") != "user":
                return f"messages.{i}.content.{j}: tool_result blocks belong in user messages"
            if seen_other:
                return (
                    f"messages.{i}: tool_result blocks must come first in the content array, "
                    "before any other content"
                )
        else:
            seen_other = True
        if kind == "tool_use" and msg.get("role") != "assistant":
            return f"messages.{i}.content.{j}: tool_use blocks belong in assistant messages"
    if final_assistant and content:
        lastb = content[-1]
        if (
            lastb.get("type") == "text"
            and str(lastb.get("text", "")) != str(lastb.get("text", "")).rstrip()
        ):
            return "messages: final assistant content cannot end with trailing whitespace"
    return None


def _validate_system(system: Any, where: str) -> str | None:
    """``system`` (top-level or a role "system" message's content): str or text blocks."""
    if isinstance(system, str):
        return None
    if not isinstance(system, list):
        return f"{where}: Input should be a valid string or list"
    for k, block in enumerate(system):
        if not isinstance(block, dict) or block.get("type") != "text":
            return f"{where}.{k}.type: Input should be 'text'"
        if not block.get("text"):
            return f"{where}: text content blocks must be non-empty"
    return None


def _validate_tool_pairing(all_messages: list[dict[str, Any]]) -> str | None:
    # role "system" messages (SDK 2.x) sit outside the user/assistant tool_use pairing, so
    # "previous"/"next" skip them; indices in error messages refer to the original list.
    turns = [(i, m) for i, m in enumerate(all_messages) if m.get("role") != "system"]
    for pos, (i, msg) in enumerate(turns):
        content = msg.get("content")
        prev = turns[pos - 1][1] if pos > 0 else None
        if msg.get("role") == "user" and isinstance(content, list):
            prev_ids: set[str] = set()
            if prev is not None and prev.get("role") == "assistant":
                prev_ids = set(_tool_use_ids(prev.get("content")))
            for j, block in enumerate(content):
                if block.get("type") == "tool_result" and block.get("tool_use_id") not in prev_ids:
                    return (
                        f"messages.{i}.content.{j}: unexpected `tool_use_id` found in "
                        f"`tool_result` blocks: {block.get('tool_use_id')}. Each `tool_result` "
                        "block must have a corresponding `tool_use` block in the previous message."
                    )
        if msg.get("role") == "assistant" and pos + 1 < len(turns):
            ids = [
                str(b.get("id"))
                for b in (content if isinstance(content, list) else [])
                if isinstance(b, dict) and b.get("type") == "tool_use"
            ]
            nxt = turns[pos + 1][1]
            answered: set[str] = set()
            if nxt.get("role") == "user" and isinstance(nxt.get("content"), list):
                answered = {
                    str(b.get("tool_use_id"))
                    for b in nxt["content"]
                    if isinstance(b, dict) and b.get("type") == "tool_result"
                }
            missing = [t for t in ids if t not in answered]
            if missing:
                return (
                    f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                    f"immediately after: {', '.join(missing)}. Each `tool_use` block must have a "
                    "corresponding `tool_result` block in the next message."
                )
    return None


def _validate_tools(tools: Any) -> str | None:
    if not isinstance(tools, list):
        return "tools: Input should be a valid list"
    names: set[str] = set()
    for k, tool in enumerate(tools):
        if not isinstance(tool, dict):
            return f"tools.{k}: Input should be an object"
        if tool.get("type") not in (None, "custom"):
            continue  # server / built-in tools have their own schemas
        name = tool.get("name")
        if not isinstance(name, str) or not _TOOL_NAME_RE.match(name):
            return f"tools.{k}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'"
        if name in names:
            return "tools: Tool names must be unique."
        names.add(name)
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            return f"tools.{k}.custom.input_schema.type: Input should be 'object'"
    return None


def validate_messages_request(body: Any) -> str | None:
    """Check a ``/v1/messages`` body like the real API would; return an error message or None.

    Checks: JSON object; ``model`` string; ``max_tokens`` int >= 1; ``messages`` non-empty
    list of ``{"role": "user"|"assistant"|"system", "content": str|list}`` (system-role
    messages, new in SDK 2.x, take a string or text blocks); non-empty content (except a
    final assistant prefill, which must not end in whitespace); non-empty text blocks;
    tool_result blocks first in their user message and answering the previous assistant
    message's tool_use ids, and every tool_use answered in the next message; ``system`` a
    string or list of non-empty text blocks; custom tools with valid, unique names and an
    object ``input_schema``; ``stream`` a bool.
    """
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool):
        return "max_tokens: Field required"
    if max_tokens < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    if "stream" in body and not isinstance(body["stream"], bool):
        return "stream: Input should be a valid boolean"
    messages = body.get("messages")
    if not isinstance(messages, list):
        return "messages: Field required"
    if not messages:
        return "messages: at least one message is required"
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict):
            return f"messages.{i}: Input should be an object"
        role = msg.get("role")
        if role not in ("user", "assistant", "system"):
            return f"messages.{i}.role: Input should be 'user', 'assistant' or 'system'"
        if role == "system":
            problem = _validate_system(msg.get("content"), f"messages.{i}.content")
        else:
            problem = _validate_content(i, msg, i == len(messages) - 1)
        if problem:
            return problem
    problem = _validate_tool_pairing(messages)
    if problem:
        return problem
    if body.get("system") is not None:
        problem = _validate_system(body["system"], "system")
        if problem:
            return problem
    if "tools" in body:
        problem = _validate_tools(body["tools"])
        if problem:
            return problem
    if "tool_choice" in body:
        return _validate_tool_choice(body["tool_choice"], body.get("tools"))
    return None


def _validate_tool_choice(choice: Any, tools: Any) -> str | None:
    """``tool_choice``: ``{"type": "auto"|"any"|"none"}`` or ``{"type": "tool", "name": N}``
    with N one of the request's tools (the real API refuses a forced tool it was not given)."""
    if not isinstance(choice, dict) or choice.get("type") not in ("auto", "any", "tool", "none"):
        return "tool_choice: Input tag does not match any of the expected tags"
    if choice["type"] == "tool":
        names = [t.get("name") for t in tools or [] if isinstance(t, dict)]
        if not isinstance(choice.get("name"), str):
            return "tool_choice.tool.name: Field required"
        if choice["name"] not in names:
            return f"tool_choice: tool {choice['name']!r} is not one of the request's tools"
    return None


# --------------------------------------------------------------------------------------
# Wire format
# --------------------------------------------------------------------------------------


def _split(s: str, n: int) -> list[str]:
    """Split ``s`` into ``n`` roughly equal, non-empty pieces (fewer if ``s`` is short)."""
    if not s:
        return []
    n = max(1, min(n, len(s)))
    size, extra = divmod(len(s), n)
    pieces: list[str] = []
    start = 0
    for k in range(n):
        end = start + size + (1 if k < extra else 0)
        pieces.append(s[start:end])
        start = end
    return pieces


def _text_pieces(s: str, chunks: tuple[str, ...] | int | None) -> list[str]:
    if isinstance(chunks, tuple) and "".join(chunks) == s:
        return [c for c in chunks if c]
    return _split(s, chunks if isinstance(chunks, int) else 3)


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {_dumps(data)}\n\n".encode()


def _materialise_blocks(blocks: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Full (non-stream) content blocks, with fresh tool_use ids where none was given."""
    out: list[dict[str, Any]] = []
    for block in blocks:
        b = dict(block)
        if b["type"] == "tool_use" and not b.get("id"):
            b["id"] = f"toolu_fake{uuid.uuid4().hex[:20]}"
        out.append(b)
    return out


def _block_stream_events(
    index: int, block: Mapping[str, Any], chunks: tuple[str, ...] | int | None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(content_block_start payload, list of delta payloads) for one content block."""
    kind = block["type"]
    start: dict[str, Any]
    if kind == "text":
        start = {"type": "text", "text": ""}
        deltas = [
            {"type": "text_delta", "text": piece} for piece in _text_pieces(block["text"], chunks)
        ]
    elif kind == "tool_use":
        start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        raw = _dumps(block["input"])
        pieces = [""] + _split(raw, max(2, min(4, len(raw))))
        deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
    elif kind == "thinking":
        start = {"type": "thinking", "thinking": "", "signature": ""}
        deltas = [
            {"type": "thinking_delta", "thinking": piece}
            for piece in _text_pieces(block["thinking"], chunks if isinstance(chunks, int) else 3)
        ]
        deltas.append({"type": "signature_delta", "signature": block["signature"]})
    else:  # pragma: no cover - multi() rejects other types
        raise ValueError(f"unsupported block type {kind!r}")
    return start, [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]


# --------------------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------------------


class _Abort(Exception):
    """Raised inside the handler to end a response by dropping the connection."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, fake: FakeAnthropic) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet: clients disconnecting mid-response is expected in these tests."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    server_version = "fakeapi/1"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the per-request access log."""

    def setup(self) -> None:
        super().setup()
        self.connected_at = time.monotonic()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()
        self.server.fake._track(self.connection, add=False)

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_PATCH(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    # -- request --------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _dispatch(self) -> None:
        fake = self.server.fake
        raw = self._read_body()
        headers: dict[str, str] = {}
        for key, value in self.headers.items():
            k = key.lower()
            headers[k] = f"{headers[k]}, {value}" if k in headers else value
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
        split = urlsplit(self.path)
        rec = Recorded(
            method=self.command,
            path=split.path,
            headers=headers,
            body=body,
            received_at=time.monotonic(),
            query=split.query,
            raw=raw,
            connected_at=self.connected_at,
        )
        if self.command == "POST" and split.path == MESSAGES_PATH:
            rec.reply = fake._choose_reply(rec)
            reply = rec.reply
        elif self.command == "GET" and split.path == MODELS_PATH:
            fake._record(rec)
            self._list_models(headers)
            return
        else:
            reply = error(404, "not_found_error", f"Not found: {self.command} {split.path}")
        fake._record(rec)
        try:
            self._respond(reply, rec)
        except _Abort:
            self._kill_connection()
        except OSError:  # the client went away (timeout, closed stream early)
            self.close_connection = True
        except Exception as exc:  # noqa: BLE001 - a bug in the fake: surface it via api.errors
            fake._note_error(exc)
            self._kill_connection()

    # -- responses ------------------------------------------------------------------

    def _kill_connection(self) -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)

    def _wait(self, seconds: float) -> None:
        if seconds > 0 and self.server.fake._stopping.wait(seconds):
            raise _Abort

    def _start_response(self, status: int, headers: Mapping[str, str]) -> None:
        self.send_response(status, _REASONS.get(status))
        self.send_header("request-id", self.server.fake._next_request_id())
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()

    def _send_json(self, status: int, payload: Any, extra: Mapping[str, str] | None = None) -> None:
        data = _dumps(payload).encode()
        headers = {"content-type": "application/json", "content-length": str(len(data))}
        headers.update(extra or {})
        self._start_response(status, headers)
        self.wfile.write(data)
        self.wfile.flush()

    def _list_models(self, headers: Mapping[str, str]) -> None:
        """``GET /v1/models`` as the real API answers it: 401 without a key, else a page of
        models (``data``, ``has_more``, ``first_id``, ``last_id``)."""
        if not headers.get("x-api-key") and not headers.get("authorization"):
            payload = {
                "type": "error",
                "error": {
                    "type": "authentication_error",
                    "message": "x-api-key header is required",
                },
            }
            self._send_json(401, payload, {})
            return
        data = [
            {
                "type": "model",
                "id": DEFAULT_MODEL,
                "display_name": "Fake model",
                "created_at": "2026-01-01T00:00:00Z",
            }
        ]
        page = {
            "data": data,
            "has_more": False,
            "first_id": DEFAULT_MODEL,
            "last_id": DEFAULT_MODEL,
        }
        self._send_json(200, page, {})

    def _respond(self, reply: Reply, rec: Recorded) -> None:
        self._wait(reply.delay)
        reply = _resolve_forced(reply, rec.body)
        if reply.kind == "error" or (reply.kind == "stream_error" and not rec.stream):
            payload = {
                "type": "error",
                "error": {"type": reply.error_type, "message": reply.error_message},
            }
            self._send_json(reply.status, payload, reply.headers)
            return
        if reply.kind in ("drop", "malformed") and not rec.stream:
            raise _Abort
        model = (
            reply.model
            or (rec.body.get("model") if isinstance(rec.body, dict) else None)
            or DEFAULT_MODEL
        )
        blocks = _materialise_blocks(reply.blocks)
        usage = reply.resolved_usage()
        msg_id = f"msg_fake{uuid.uuid4().hex[:20]}"
        if not rec.stream:
            self._send_json(
                200,
                {
                    "id": msg_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": blocks,
                    "stop_reason": reply.stop_reason,
                    "stop_sequence": None,
                    "usage": usage,
                },
            )
            return
        self._stream(reply, blocks, model, msg_id, usage)

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _stream(
        self,
        reply: Reply,
        blocks: list[dict[str, Any]],
        model: str,
        msg_id: str,
        usage: dict[str, int],
    ) -> None:
        self._start_response(
            200,
            {
                "content-type": "text/event-stream; charset=utf-8",
                "cache-control": "no-cache",
                "transfer-encoding": "chunked",
            },
        )
        start_usage = dict(usage)
        start_usage["output_tokens"] = min(1, usage.get("output_tokens", 1))
        self._write_chunk(
            _sse(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": msg_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": start_usage,
                    },
                },
            )
        )
        pinged = False
        partial = reply.kind in ("drop", "stream_error", "truncate", "malformed")
        budget = reply.after_chunks
        for index, block in enumerate(blocks):
            start, deltas = _block_stream_events(
                index, block, (budget or None) if partial else reply.chunks
            )
            self._write_chunk(
                _sse(
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start},
                )
            )
            if not pinged:
                self._write_chunk(_sse("ping", {"type": "ping"}))
                pinged = True
            for n, delta in enumerate(deltas):
                if partial and n >= budget:
                    break
                if n:
                    self._wait(reply.chunk_delay)
                self._write_chunk(_sse("content_block_delta", delta))
            if partial:
                break
            self._write_chunk(
                _sse("content_block_stop", {"type": "content_block_stop", "index": index})
            )
        if reply.kind == "drop":
            raise _Abort
        if reply.kind == "malformed":
            self._write_chunk(b'event: content_block_delta\ndata: {"type": "content_bl\n\n')
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            return
        if reply.kind == "truncate":
            self.wfile.write(b"0\r\n\r\n")  # a clean end of body, but no message_stop
            self.wfile.flush()
            return
        if reply.kind == "stream_error":
            self._write_chunk(
                _sse(
                    "error",
                    {
                        "type": "error",
                        "error": {"type": reply.error_type, "message": reply.error_message},
                    },
                )
            )
        else:
            self._write_chunk(
                _sse(
                    "message_delta",
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
                        "usage": usage,
                    },
                )
            )
            self._write_chunk(_sse("message_stop", {"type": "message_stop"}))
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


_NOTHING_FOUND: dict[str, dict[str, Any]] = {
    "record_facts": {"facts": []},
    "record_consolidation": {"actions": []},
}
"""What the default handler answers a request forcing one of these tools: nothing found."""


class FakeAnthropic:
    """A fake Anthropic Messages API on ``127.0.0.1:<random port>``, served from a daemon thread.

    Use as a context manager (``with FakeAnthropic() as api:``) or call :meth:`start` /
    :meth:`stop`. Public attributes:

    - ``base_url``: ``"http://127.0.0.1:PORT"`` (for ``base_url=`` / ``ANTHROPIC_BASE_URL``).
    - ``requests``: every :class:`Recorded` request, in arrival order (any path/method).
    - ``handler``: ``(Recorded) -> Reply`` used when the queue is empty; settable. The default
      handler returns ``default``.
    - ``default``: the :class:`Reply` returned by the default handler (initially ``text("ok")``;
      while unchanged, a request forcing ``record_facts`` or ``record_consolidation`` gets an
      empty list of them instead).
    - ``errors``: exceptions raised by a custom ``handler`` (each answered with a 500) or,
      should the fake itself have a bug, while writing a response (connection dropped).
    - ``validate``: check ``/v1/messages`` bodies like the real API (see
      :func:`validate_messages_request`); failures get 400 without consuming the queue.
    """

    def __init__(self, *, validate: bool = True) -> None:
        self.validate = validate
        self.requests: list[Recorded] = []
        self.errors: list[BaseException] = []
        self.default: Reply = text("ok")
        self._initial_default = self.default
        self.handler: Callable[[Recorded], Reply] = self._default_handler
        self._queue: deque[Reply] = deque()
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._ids = itertools.count(1)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------

    def start(self) -> Self:
        """Bind a free loopback port and start serving; returns self. Raises if running."""
        if self._server is not None:
            raise RuntimeError("FakeAnthropic is already running")
        self._stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.01},
            name=f"FakeAnthropic:{self.port}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every socket, cutting short any delays/hangs. Idempotent."""
        server, thread = self._server, self._thread
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        with self._cond:
            conns = list(self._connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        server.server_close()
        if thread is not None:
            thread.join(timeout=2.0)
        self._server = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound TCP port (only while running)."""
        if self._server is None:
            raise RuntimeError("FakeAnthropic is not running")
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``"http://127.0.0.1:PORT"``; the SDK appends ``/v1/messages`` itself."""
        return f"http://127.0.0.1:{self.port}"

    # -- scripting ------------------------------------------------------------------

    def queue(self, *replies: Reply) -> None:
        """Append replies to the FIFO; each ``POST /v1/messages`` consumes one."""
        with self._cond:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        """Number of queued replies not yet consumed."""
        with self._cond:
            return len(self._queue)

    def reset(self) -> None:
        """Forget recorded requests/errors, empty the queue, restore default handler/reply."""
        with self._cond:
            self.requests.clear()
            self.errors.clear()
            self._queue.clear()
        self.default = text("ok")
        self.handler = self._default_handler

    # -- inspection -----------------------------------------------------------------

    @property
    def last(self) -> Recorded:
        """The most recent request; raises LookupError if there is none."""
        with self._cond:
            if not self.requests:
                raise LookupError("FakeAnthropic has not received any request")
            return self.requests[-1]

    @property
    def message_requests(self) -> list[Recorded]:
        """Recorded ``POST /v1/messages`` requests only (a snapshot list)."""
        with self._cond:
            return [r for r in self.requests if r.method == "POST" and r.path == MESSAGES_PATH]

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[Recorded]:
        """Block until at least ``n`` requests were recorded; return a snapshot of them all.

        Raises TimeoutError after ``timeout`` seconds.
        """
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.requests) >= n, timeout=timeout):
                raise TimeoutError(
                    f"expected {n} request(s) within {timeout}s, got {len(self.requests)}"
                )
            return list(self.requests)

    # -- internals (called from handler threads) ------------------------------------

    def _default_handler(self, rec: Recorded) -> Reply:
        # A model made to record facts or a memory review, with nothing queued for it, finds
        # nothing (rather than answering "ok", which rheo rightly fails as unreadable).
        if self.default is self._initial_default:
            choice = rec.body.get("tool_choice") if isinstance(rec.body, dict) else None
            name = choice.get("name") if isinstance(choice, dict) else None
            if name in _NOTHING_FOUND:
                return structured(_NOTHING_FOUND[name])
        return self.default

    def _choose_reply(self, rec: Recorded) -> Reply:
        if self.validate:
            if not rec.api_key:
                return error(401, "authentication_error", "x-api-key header is required")
            problem = validate_messages_request(rec.body)
            if problem is not None:
                return error(400, "invalid_request_error", problem)
        with self._cond:
            if self._queue:
                return self._queue.popleft()
        try:
            return self.handler(rec)
        except Exception as exc:  # noqa: BLE001 - a broken test handler must not hang the client
            self._note_error(exc)
            return error(500, "api_error", f"fake handler raised {exc!r}")

    def _note_error(self, exc: BaseException) -> None:
        with self._cond:
            self.errors.append(exc)

    def _record(self, rec: Recorded) -> None:
        with self._cond:
            self.requests.append(rec)
            self._cond.notify_all()

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._cond:
            if add:
                self._connections.add(conn)
            else:
                self._connections.discard(conn)

    def _next_request_id(self) -> str:
        return f"req_fake{next(self._ids):06d}"
