"""A local, test-only HTTP server that speaks OpenAI's Chat Completions API.

The real ``openai`` SDK (and so rheo's OpenAI-compatible provider) can be pointed at it
(``base_url=server.base_url``, which ends in ``/v1``) so that HTTP, SSE parsing, tool calls,
retries and timeouts are exercised end to end without network. Standard library only, in the
style of `fakeapi`::

    with FakeOpenAI() as server:
        server.queue(text("Hello!"), tool_call("write_memory", {...}), error(429, ...))
        ...
        assert server.last.body["model"] == "gpt-test"

Each ``POST /v1/chat/completions`` consumes one reply from the FIFO (else ``server.default``);
it is sent as JSON or, when the request says ``"stream": true``, as Server-Sent Events
(``data: {chunk}`` lines, a usage chunk when ``stream_options.include_usage``, ``[DONE]``).
``GET /v1/models`` lists one model. Bodies are checked as the real API checks them (roles,
``tool`` messages answering an assistant's ``tool_calls``); a bad one gets 400 without
consuming a reply.
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, Self

COMPLETIONS_PATH = "/v1/chat/completions"
DEFAULT_MODEL = "gpt-test"
DEFAULT_USAGE: Mapping[str, int] = {"prompt_tokens": 12, "completion_tokens": 5, "cached_tokens": 0}
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")

Kind = Literal["message", "error", "drop", "malformed", "truncate"]


@dataclass(frozen=True)
class Reply:
    """One scripted response; build it with `text`, `tool_call`, `error`, `drop`,
    `malformed`, `truncate` or `hang`. ``chunks``: how many SSE pieces the text is cut in."""

    kind: Kind
    text: str = ""
    calls: tuple[tuple[str, Mapping[str, Any]], ...] = ()
    finish_reason: str = "stop"
    usage: Mapping[str, int] = field(default_factory=dict)
    model: str | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0
    chunks: int = 3
    status: int = 200
    message: str = ""
    code: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)

    def resolved_usage(self) -> dict[str, int]:
        """DEFAULT_USAGE with this reply's overrides."""
        return {**DEFAULT_USAGE, **self.usage}


def text(s: str, *, usage: Mapping[str, int] | None = None, **kw: Any) -> Reply:
    """A plain assistant reply ``s``."""
    return Reply("message", text=s, usage=usage or {}, **kw)


def tool_call(name: str, arguments: Mapping[str, Any], *, text_before: str = "") -> Reply:
    """An assistant reply calling tool ``name`` with ``arguments`` (finish ``tool_calls``)."""
    return Reply(
        "message", text=text_before, calls=((name, arguments),), finish_reason="tool_calls"
    )


def error(status: int, message: str = "error", *, code: str | None = None, **headers: str) -> Reply:
    """An HTTP error with OpenAI's error body; ``headers`` e.g. ``retry_after="1"``."""
    return Reply(
        "error",
        status=status,
        message=message,
        code=code,
        headers={k.replace("_", "-"): v for k, v in headers.items()},
    )


def drop(text_before: str = "partial ", *, after_chunks: int = 1) -> Reply:
    """Stream ``after_chunks`` pieces of ``text_before``, then cut the connection."""
    return Reply("drop", text=text_before, chunks=after_chunks)


def malformed(text_before: str = "partial ") -> Reply:
    """Stream some text, then an SSE event whose data is not JSON."""
    return Reply("malformed", text=text_before, chunks=1)


def truncate(text_before: str = "partial ") -> Reply:
    """Stream some text and end the body cleanly, with no finish reason and no [DONE]."""
    return Reply("truncate", text=text_before, chunks=1)


def hang(seconds: float, s: str = "ok") -> Reply:
    """Wait ``seconds`` before answering ``s`` (a slow server)."""
    return Reply("message", text=s, delay=seconds)


@dataclass
class Recorded:
    """One request: method, path, headers (lower-case keys), parsed JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any

    @property
    def stream(self) -> bool:
        """Whether the request asked for SSE."""
        return isinstance(self.body, dict) and bool(self.body.get("stream"))


def validate(body: Any) -> str | None:
    """Why a Chat Completions body would be refused (None: it is fine)."""
    if not isinstance(body, dict):
        return "the body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model is required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty array"
    open_calls: set[str] = set()
    for i, msg in enumerate(messages):
        role = msg.get("role") if isinstance(msg, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return f"messages[{i}].role is invalid"
        if role == "tool":
            if msg.get("tool_call_id") not in open_calls:
                return f"messages[{i}]: a tool message must answer a preceding tool_call id"
            open_calls.discard(msg["tool_call_id"])
            continue
        if open_calls:
            return f"messages[{i}]: tool_calls {sorted(open_calls)} have no tool message"
        if role == "assistant":
            for call in msg.get("tool_calls") or []:
                open_calls.add(call["id"])
                json.loads(call["function"]["arguments"])
            if msg.get("content") is None and not msg.get("tool_calls"):
                return f"messages[{i}]: an assistant message needs content or tool_calls"
        elif not isinstance(msg.get("content"), str | list):
            return f"messages[{i}].content must be a string or an array"
    for tool in body.get("tools") or []:
        name = tool.get("function", {}).get("name", "")
        if tool.get("type") != "function" or not _NAME.match(name):
            return f"invalid tool {name!r}"
    return None


class _Abort(Exception):
    """End the response by dropping the connection."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, fake: FakeOpenAI) -> None:
        self.fake = fake
        super().__init__(("127.0.0.1", 0), _Handler)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Stay quiet: clients going away mid-response is expected here."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """No access log."""

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        rec = Recorded(
            self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body
        )
        fake._record(rec)
        try:
            if self.command == "GET" and self.path.rstrip("/") == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": DEFAULT_MODEL}]})
            elif self.command == "POST" and self.path == COMPLETIONS_PATH:
                problem = validate(body) if fake.validate else None
                if problem:
                    self._json(400, _error_body(problem, "invalid_request_error"))
                else:
                    self._respond(fake._next(), rec)
            else:
                self._json(404, _error_body(f"no route {self.path}", None))
        except _Abort:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            self.close_connection = True

    def _json(self, status: int, payload: Any, headers: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _wait(self, seconds: float) -> None:
        if seconds > 0 and self.server.fake._stopping.wait(seconds):
            raise _Abort

    def _respond(self, reply: Reply, rec: Recorded) -> None:
        self._wait(reply.delay)
        if reply.kind == "error":
            self._json(reply.status, _error_body(reply.message, reply.code), reply.headers)
            return
        model = reply.model or rec.body.get("model") or DEFAULT_MODEL
        usage = reply.resolved_usage()
        usage_body = {
            "prompt_tokens": usage["prompt_tokens"],
            "completion_tokens": usage["completion_tokens"],
            "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"],
            "prompt_tokens_details": {"cached_tokens": usage["cached_tokens"]},
        }
        calls = [
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(dict(args))},
            }
            for name, args in reply.calls
        ]
        if not rec.stream:
            if reply.kind != "message":
                raise _Abort
            message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
            if calls:
                message["tool_calls"] = calls
            self._json(
                200,
                {
                    "id": "chatcmpl-fake",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": model,
                    "choices": [
                        {"index": 0, "message": message, "finish_reason": reply.finish_reason}
                    ],
                    "usage": usage_body,
                },
            )
            return
        self._stream(reply, rec, model, calls, usage_body)

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _event(self, model: str, delta: dict[str, Any], finish: str | None = None) -> None:
        payload = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        self._chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")

    def _stream(
        self,
        reply: Reply,
        rec: Recorded,
        model: str,
        calls: list[dict[str, Any]],
        usage: dict[str, Any],
    ) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        self._event(model, {"role": "assistant", "content": ""})
        pieces = _split(reply.text, reply.chunks) if reply.text else []
        for n, piece in enumerate(pieces):
            if n:
                self._wait(reply.chunk_delay)
            self._event(model, {"content": piece})
        if reply.kind == "drop":
            raise _Abort
        if reply.kind == "malformed":
            self._chunk(b'data: {"choices": [ this is not json\n\n')
            self._chunk(b"0\r\n\r\n")
            return
        if reply.kind == "truncate":
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
            return
        for index, call in enumerate(calls):
            head = {
                "index": index,
                "id": call["id"],
                "type": "function",
                "function": {"name": call["function"]["name"], "arguments": ""},
            }
            self._event(model, {"tool_calls": [head]})
            for part in _split(call["function"]["arguments"], 2):
                self._event(
                    model, {"tool_calls": [{"index": index, "function": {"arguments": part}}]}
                )
        self._event(model, {}, reply.finish_reason)
        options = rec.body.get("stream_options") or {}
        if options.get("include_usage"):
            payload = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [],
                "usage": usage,
            }
            self._chunk(b"data: " + json.dumps(payload).encode() + b"\n\n")
        self._chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _split(s: str, n: int) -> list[str]:
    n = max(1, min(n, len(s)))
    size = -(-len(s) // n)
    return [s[i : i + size] for i in range(0, len(s), size)]


def _error_body(message: str, code: str | None) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


class FakeOpenAI:
    """A fake Chat Completions API on ``127.0.0.1:<random port>`` (``base_url`` ends in /v1).

    ``requests``: every request; ``default``: the reply when the queue is empty;
    ``validate``: check bodies like the real API."""

    def __init__(self, *, validate: bool = True) -> None:
        self.validate = validate
        self.requests: list[Recorded] = []
        self.default: Reply = text("ok")
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: _Server | None = None

    def __enter__(self) -> Self:
        self._server = _Server(self)
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        ).start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def queue(self, *replies: Reply) -> None:
        """Answer the next completions requests with ``replies``, in order."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def completions(self) -> list[Recorded]:
        """The ``POST /v1/chat/completions`` requests received."""
        return [r for r in self.requests if r.path == COMPLETIONS_PATH]

    @property
    def last(self) -> Recorded:
        """The last completions request."""
        return self.completions[-1]

    def _next(self) -> Reply:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default

    def _record(self, rec: Recorded) -> None:
        with self._lock:
            self.requests.append(rec)
