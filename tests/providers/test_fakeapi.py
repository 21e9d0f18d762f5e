"""Tests for the fake Messages API server and the network guard, using the real anthropic SDK."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import netguard
import pytest
from fakeapi import (
    DEFAULT_USAGE,
    FakeAnthropic,
    Recorded,
    Reply,
    drop,
    error,
    hang,
    multi,
    stream_error,
    text,
    tool_use,
)

netguard.install()

MODEL = "claude-test-model"
HELLO: list[anthropic.types.MessageParam] = [{"role": "user", "content": "hi"}]


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server
    assert server.errors == [], "the fake server hit an internal error"


_BASE_CLIENT: anthropic.Anthropic | None = None


def make_client(
    api: FakeAnthropic, *, max_retries: int = 0, timeout: float = 5.0
) -> anthropic.Anthropic:
    """A real SDK client aimed at ``api``.

    Built with ``with_options`` from one shared client: constructing a fresh
    ``anthropic.Anthropic`` costs ~20-40 ms (TLS context), which adds up over this file.
    """
    global _BASE_CLIENT
    if _BASE_CLIENT is None:
        _BASE_CLIENT = anthropic.Anthropic(base_url=api.base_url, api_key="test-key")
    return _BASE_CLIENT.with_options(
        base_url=api.base_url, max_retries=max_retries, timeout=timeout
    )


def create(client: anthropic.Anthropic, **kwargs: Any) -> anthropic.types.Message:
    """``client.messages.create`` (non-streaming) with defaults for the required parameters."""
    params: dict[str, Any] = {"model": MODEL, "max_tokens": 100, "messages": HELLO}
    params.update(kwargs)
    message: anthropic.types.Message = client.messages.create(**params)
    return message


# --------------------------------------------------------------------------------------
# Text
# --------------------------------------------------------------------------------------


def test_non_stream_text_and_usage(api: FakeAnthropic) -> None:
    api.queue(text("Hello there", usage={"input_tokens": 42, "cache_read_input_tokens": 7}))
    msg = create(make_client(api), model="claude-x")
    assert isinstance(msg, anthropic.types.Message)
    assert [b.type for b in msg.content] == ["text"]
    assert msg.content[0].text == "Hello there"  # type: ignore[union-attr]
    assert msg.stop_reason == "end_turn"
    assert msg.model == "claude-x"
    assert msg.id.startswith("msg_")
    assert msg.usage.input_tokens == 42
    assert msg.usage.output_tokens == DEFAULT_USAGE["output_tokens"]
    assert msg.usage.cache_read_input_tokens == 7
    assert msg.usage.cache_creation_input_tokens == 0
    assert api.pending == 0
    assert api.last.reply is not None and api.last.reply.kind == "message"


def test_default_reply_when_queue_empty(api: FakeAnthropic) -> None:
    client = make_client(api)
    assert create(client).content[0].text == "ok"  # type: ignore[union-attr]
    api.default = text("fallback", model="claude-other")
    msg = create(client)
    assert msg.content[0].text == "fallback"  # type: ignore[union-attr]
    assert msg.model == "claude-other"


def test_stream_text_chunks_and_final_message(api: FakeAnthropic) -> None:
    chunks = ["Hello", ", streaming", " world"]
    api.queue(text("".join(chunks), chunks=chunks, usage={"output_tokens": 17}))
    with make_client(api).messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        pieces = list(stream.text_stream)
        final = stream.get_final_message()
    assert pieces == chunks
    assert final.content[0].text == "Hello, streaming world"  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn"
    assert final.usage.input_tokens == 10
    assert final.usage.output_tokens == 17
    assert api.last.stream is True


@pytest.mark.parametrize(
    ("s", "chunks", "expected"),
    [
        ("abcdefghi", None, ["abc", "def", "ghi"]),
        ("abcdefghij", 2, ["abcde", "fghij"]),
        ("ab", None, ["a", "b"]),
        ("", None, []),
    ],
)
def test_stream_chunking(
    api: FakeAnthropic, s: str, chunks: int | None, expected: list[str]
) -> None:
    api.queue(text(s, chunks=chunks))
    with make_client(api).messages.stream(model=MODEL, max_tokens=10, messages=HELLO) as stream:
        assert list(stream.text_stream) == expected
        assert stream.get_final_text() == s


def test_raw_stream_event_order(api: FakeAnthropic) -> None:
    api.queue(text("one two", chunks=2))
    client = make_client(api)
    events = list(client.messages.create(model=MODEL, max_tokens=5, messages=HELLO, stream=True))
    assert [e.type for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]  # the SDK drops the `ping` event itself
    delta = events[-2]
    assert isinstance(delta, anthropic.types.RawMessageDeltaEvent)
    assert delta.delta.stop_reason == "end_turn"
    assert delta.usage.output_tokens == 5


@pytest.mark.boundary
def test_sse_wire_format() -> None:
    """The raw bytes look like the real API's: `event:`/`data:` pairs, one ping, chunked."""
    with FakeAnthropic() as api:
        api.queue(text("hey", chunks=["h", "ey"]))
        body = {"model": MODEL, "max_tokens": 5, "messages": HELLO, "stream": True}
        headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
        with httpx2.Client() as client:
            resp = client.post(f"{api.base_url}/v1/messages", json=body, headers=headers)
    assert resp.status_code == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    assert resp.headers["transfer-encoding"] == "chunked"
    assert resp.headers["request-id"].startswith("req_")
    frames = [f for f in resp.text.split("\n\n") if f]
    names = [f.split("\n")[0].removeprefix("event: ") for f in frames]
    assert names == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    for frame, name in zip(frames, names, strict=True):
        _event_line, data_line = frame.split("\n")
        assert json.loads(data_line.removeprefix("data: "))["type"] == name


# --------------------------------------------------------------------------------------
# Tool use
# --------------------------------------------------------------------------------------

TOOL_INPUT: dict[str, Any] = {
    "query": "weather in Zürich",
    "limit": 3,
    "tags": ["a", "b"],
    "nested": {"ok": True, "none": None},
}


def test_tool_use_non_stream(api: FakeAnthropic) -> None:
    api.queue(tool_use("search", TOOL_INPUT, id="toolu_123", text_before="Let me look."))
    msg = create(make_client(api))
    assert msg.stop_reason == "tool_use"
    assert [b.type for b in msg.content] == ["text", "tool_use"]
    block = msg.content[1]
    assert isinstance(block, anthropic.types.ToolUseBlock)
    assert (block.id, block.name, block.input) == ("toolu_123", "search", TOOL_INPUT)


def test_tool_use_stream_assembles_input_json(api: FakeAnthropic) -> None:
    api.queue(tool_use("search", TOOL_INPUT))
    client = make_client(api)
    with client.messages.stream(model=MODEL, max_tokens=100, messages=HELLO) as stream:
        events = list(stream)
        final = stream.get_final_message()
    json_deltas = [
        e.delta.partial_json
        for e in events
        if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    ]
    assert len([p for p in json_deltas if p]) >= 2
    assert json.loads("".join(json_deltas)) == TOOL_INPUT
    assert final.stop_reason == "tool_use"
    block = final.content[0]
    assert isinstance(block, anthropic.types.ToolUseBlock)
    assert block.name == "search" and block.input == TOOL_INPUT
    assert block.id.startswith("toolu_")


def test_tool_use_empty_input_streams(api: FakeAnthropic) -> None:
    api.queue(tool_use("now", {}))
    with make_client(api).messages.stream(model=MODEL, max_tokens=10, messages=HELLO) as stream:
        block = stream.get_final_message().content[0]
    assert isinstance(block, anthropic.types.ToolUseBlock) and block.input == {}


def test_multi_blocks_stream_and_non_stream(api: FakeAnthropic) -> None:
    reply = multi(
        [
            {"type": "thinking", "thinking": "hmm, let me think"},
            {"type": "text", "text": "Two tools:"},
            {"type": "tool_use", "name": "a", "input": {"x": 1}},
            {"type": "tool_use", "name": "b", "input": {"y": [2]}},
        ]
    )
    api.queue(reply, reply)
    client = make_client(api)
    plain = create(client)
    with client.messages.stream(model=MODEL, max_tokens=10, messages=HELLO) as stream:
        streamed = stream.get_final_message()
    for msg in (plain, streamed):
        assert [b.type for b in msg.content] == ["thinking", "text", "tool_use", "tool_use"]
        assert msg.stop_reason == "tool_use"
        assert msg.content[0].thinking == "hmm, let me think"  # type: ignore[union-attr]
        assert [b.input for b in msg.content[2:]] == [{"x": 1}, {"y": [2]}]  # type: ignore[union-attr]
        ids = [b.id for b in msg.content[2:]]  # type: ignore[union-attr]
        assert len(set(ids)) == 2


# --------------------------------------------------------------------------------------
# Errors and retries
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "err_type", "exc_class"),
    [
        (400, "invalid_request_error", anthropic.BadRequestError),
        (401, "authentication_error", anthropic.AuthenticationError),
        (429, "rate_limit_error", anthropic.RateLimitError),
        (500, "api_error", anthropic.InternalServerError),
        (529, "overloaded_error", anthropic.OverloadedError),
    ],
)
@pytest.mark.parametrize("streaming", [False, True])
def test_error_status_maps_to_sdk_exception(
    api: FakeAnthropic,
    status: int,
    err_type: str,
    exc_class: type[anthropic.APIStatusError],
    streaming: bool,
) -> None:
    api.queue(error(status, err_type, f"boom {status}"))
    client = make_client(api)
    with pytest.raises(anthropic.APIStatusError) as info:
        if streaming:
            with client.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as s:
                s.until_done()
        else:
            create(client)
    assert type(info.value) is exc_class
    assert info.value.status_code == status
    assert info.value.type == err_type
    assert info.value.api_message == f"boom {status}"
    assert info.value.body == {
        "type": "error",
        "error": {"type": err_type, "message": f"boom {status}"},
    }
    assert info.value.request_id is not None and info.value.request_id.startswith("req_")
    assert len(api.requests) == 1


def test_overloaded_is_an_internal_server_error() -> None:
    assert issubclass(anthropic.OverloadedError, anthropic.InternalServerError)


def test_retryable_errors_have_fast_retry_header() -> None:
    assert error(429, "rate_limit_error", "x").headers == {"retry-after-ms": "1"}
    assert error(529, "overloaded_error", "x").headers == {"retry-after-ms": "1"}
    assert error(400, "invalid_request_error", "x").headers == {}
    custom = error(429, "rate_limit_error", "x", headers={"Retry-After": "3"})
    assert custom.headers == {"retry-after": "3"}


def test_retries_are_fast_and_recorded(api: FakeAnthropic) -> None:
    api.queue(
        error(529, "overloaded_error", "busy"),
        error(429, "rate_limit_error", "slow down"),
        text("finally"),
    )
    start = time.monotonic()
    msg = create(make_client(api, max_retries=2))
    assert time.monotonic() - start < 1.0
    assert msg.content[0].text == "finally"  # type: ignore[union-attr]
    assert len(api.requests) == 3
    assert [r.headers["x-stainless-retry-count"] for r in api.requests] == ["0", "1", "2"]


def test_retries_exhausted_raise_last_error(api: FakeAnthropic) -> None:
    api.queue(*[error(500, "api_error", f"e{i}") for i in range(3)], text("never"))
    with pytest.raises(anthropic.InternalServerError) as info:
        create(make_client(api, max_retries=2))
    assert info.value.api_message == "e2"
    assert len(api.requests) == 3
    assert api.pending == 1


def test_non_retryable_error_is_not_retried(api: FakeAnthropic) -> None:
    api.queue(error(400, "invalid_request_error", "bad"), text("unused"))
    with pytest.raises(anthropic.BadRequestError):
        create(make_client(api, max_retries=2))
    assert len(api.requests) == 1


def test_stream_retry_after_error(api: FakeAnthropic) -> None:
    api.queue(error(529, "overloaded_error", "busy"), text("streamed ok"))
    client = make_client(api, max_retries=1)
    with client.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as stream:
        assert stream.get_final_text() == "streamed ok"
    assert len(api.requests) == 2


# --------------------------------------------------------------------------------------
# Broken connections and timeouts
# --------------------------------------------------------------------------------------


def test_dropped_stream_raises_remote_protocol_error(api: FakeAnthropic) -> None:
    api.queue(drop("partial answer", after_chunks=2))
    received: list[str] = []
    start = time.monotonic()
    client = make_client(api, max_retries=2)
    with (
        pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"),
        client.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as stream,
    ):
        received.extend(stream.text_stream)
    assert time.monotonic() - start < 2.0
    assert "".join(received) == "partial answer"
    assert len(api.requests) == 1  # a mid-stream failure is never retried by the SDK


def test_dropped_stream_is_not_wrapped_by_sdk(api: FakeAnthropic) -> None:
    api.queue(drop())
    client = make_client(api)
    with (
        pytest.raises(Exception) as info,
        client.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as s,
    ):
        s.get_final_message()
    assert not isinstance(info.value, anthropic.AnthropicError)
    assert isinstance(info.value, httpx2.TransportError)


def test_dropped_non_stream_raises_connection_error(api: FakeAnthropic) -> None:
    api.queue(drop())
    with pytest.raises(anthropic.APIConnectionError) as info:
        create(make_client(api))
    assert type(info.value) is anthropic.APIConnectionError
    assert isinstance(info.value.__cause__, httpx2.RemoteProtocolError)


def test_dropped_non_stream_is_retried(api: FakeAnthropic) -> None:
    # Connection errors carry no retry-after header: the SDK backs off ~0.4-0.5 s here.
    api.queue(drop(), text("second try"))
    msg = create(make_client(api, max_retries=1))
    assert msg.content[0].text == "second try"  # type: ignore[union-attr]
    assert len(api.requests) == 2


def test_stream_error_event_mid_stream(api: FakeAnthropic) -> None:
    api.queue(stream_error("overloaded_error", "Overloaded", text_before="so far"))
    received: list[str] = []
    client = make_client(api, max_retries=2)
    with (
        pytest.raises(anthropic.APIStatusError) as info,
        client.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as stream,
    ):
        received.extend(stream.text_stream)
    # The HTTP status was already 200, so the SDK cannot pick OverloadedError.
    assert type(info.value) is anthropic.APIStatusError
    assert info.value.status_code == 200
    assert info.value.type == "overloaded_error"
    assert "".join(received) == "so far"
    assert len(api.requests) == 1


def test_stream_error_reply_non_stream_is_http_error(api: FakeAnthropic) -> None:
    api.queue(stream_error("overloaded_error", "Overloaded"))
    with pytest.raises(anthropic.OverloadedError):
        create(make_client(api))


def test_hang_with_client_timeout(api: FakeAnthropic) -> None:
    api.queue(hang(10))
    start = time.monotonic()
    with pytest.raises(anthropic.APITimeoutError):
        create(make_client(api, timeout=0.3))
    assert time.monotonic() - start < 2.0
    assert len(api.wait_for_requests(1)) == 1


def test_hang_stream_with_client_timeout(api: FakeAnthropic) -> None:
    api.queue(hang(10))
    client = make_client(api, timeout=0.3)
    with (
        pytest.raises(anthropic.APITimeoutError),
        client.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as stream,
    ):
        stream.until_done()


def test_short_hang_then_reply(api: FakeAnthropic) -> None:
    api.queue(hang(0.2, "late"))
    start = time.monotonic()
    assert create(make_client(api)).content[0].text == "late"  # type: ignore[union-attr]
    assert time.monotonic() - start >= 0.2


@pytest.mark.boundary
def test_stop_is_fast_with_pending_hang() -> None:
    api = FakeAnthropic().start()
    api.queue(hang(30))
    client = make_client(api, timeout=30)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            create(client)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    api.wait_for_requests(1)
    start = time.monotonic()
    api.stop()
    worker.join(5)
    assert time.monotonic() - start < 1.5
    assert not worker.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], anthropic.APIConnectionError)
    api.stop()  # idempotent


@pytest.mark.boundary
def test_server_is_quiet_on_disconnects(capfd: pytest.CaptureFixture[str]) -> None:
    with FakeAnthropic() as api:
        api.queue(drop(), hang(5), text("x" * 200, chunks=50, chunk_delay=0.01))
        client = make_client(api, timeout=0.2)
        with (
            pytest.raises(httpx2.RemoteProtocolError),
            client.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as s,
        ):
            s.until_done()
        with pytest.raises(anthropic.APITimeoutError):
            create(client)
        with client.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as s:
            next(iter(s.text_stream))  # leave early: the client closes mid-stream
        time.sleep(0.1)
    captured = capfd.readouterr()
    assert captured.err == ""
    assert captured.out == ""


# --------------------------------------------------------------------------------------
# Recording, routing, handler
# --------------------------------------------------------------------------------------


def test_request_body_and_headers_recorded(api: FakeAnthropic) -> None:
    tools = [
        {
            "name": "remember",
            "description": "Store a fact.",
            "input_schema": {"type": "object", "properties": {"fact": {"type": "string"}}},
        }
    ]
    system = [{"type": "text", "text": "You are rheo.", "cache_control": {"type": "ephemeral"}}]
    client = make_client(api)
    with client.messages.stream(
        model="claude-sonnet-test",
        max_tokens=321,
        system=system,  # type: ignore[arg-type]
        messages=[{"role": "user", "content": "remember milk"}],
        tools=tools,  # type: ignore[arg-type]
    ) as stream:
        stream.until_done()
    rec = api.last
    assert isinstance(rec, Recorded)
    assert (rec.method, rec.path) == ("POST", "/v1/messages")
    assert rec.body["model"] == "claude-sonnet-test"
    assert rec.body["max_tokens"] == 321
    assert rec.body["system"] == system
    assert rec.body["messages"] == [{"role": "user", "content": "remember milk"}]
    assert rec.body["tools"] == tools
    assert rec.body["stream"] is True and rec.stream
    assert rec.api_key == "test-key"  # SDK 2.x: "authorization: Bearer test-key"
    assert "anthropic-version" in rec.headers
    assert rec.headers["content-type"] == "application/json"
    assert json.loads(rec.raw) == rec.body
    assert rec.received_at <= time.monotonic()

    create(client)
    assert api.last.body.get("stream") is None and api.last.stream is False
    assert len(api.message_requests) == 2


def test_other_paths_get_404_and_are_recorded(api: FakeAnthropic) -> None:
    api.queue(text("must stay queued"))
    client = make_client(api)
    models = client.models.list()  # the SDK parses the fake's page as the real API's
    assert [m.id for m in models.data] == ["claude-test-model"] and not models.has_more
    with pytest.raises(anthropic.NotFoundError) as info:
        client.messages.count_tokens(model=MODEL, messages=HELLO)
    assert info.value.type == "not_found_error"
    assert [(r.method, r.path) for r in api.requests] == [
        ("GET", "/v1/models"),
        ("POST", "/v1/messages/count_tokens"),
    ]
    assert api.requests[1].body["messages"] == HELLO
    assert api.pending == 1
    assert api.message_requests == []


def test_custom_handler_sees_request(api: FakeAnthropic) -> None:
    def echo(rec: Recorded) -> Reply:
        last_user = rec.body["messages"][-1]["content"]
        return text(f"echo: {last_user}")

    api.handler = echo
    api.queue(text("queued first"))
    client = make_client(api)
    assert create(client).content[0].text == "queued first"  # type: ignore[union-attr]
    reply = create(client, messages=[{"role": "user", "content": "ping"}])
    assert reply.content[0].text == "echo: ping"  # type: ignore[union-attr]


def test_broken_handler_answers_500(api: FakeAnthropic) -> None:
    def broken(rec: Recorded) -> Reply:
        raise KeyError("oops")

    api.handler = broken
    with pytest.raises(anthropic.InternalServerError):
        create(make_client(api))
    assert len(api.errors) == 1 and isinstance(api.errors[0], KeyError)
    api.errors.clear()


def test_async_client_stream(api: FakeAnthropic) -> None:
    api.queue(text("async hello", chunks=2), tool_use("t", {"a": 1}))

    async def main() -> tuple[list[str], anthropic.types.Message]:
        client = anthropic.AsyncAnthropic(base_url=api.base_url, api_key="test-key", max_retries=0)
        async with client:
            async with client.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as stream:
                pieces = [p async for p in stream.text_stream]
            second = await client.messages.create(model=MODEL, max_tokens=5, messages=HELLO)
        return pieces, second

    pieces, second = asyncio.run(main())
    assert pieces == ["async ", "hello"]
    block = second.content[0]
    assert isinstance(block, anthropic.types.ToolUseBlock) and block.input == {"a": 1}


def test_wait_for_requests_times_out(api: FakeAnthropic) -> None:
    with pytest.raises(TimeoutError):
        api.wait_for_requests(1, timeout=0.05)
    with pytest.raises(LookupError):
        _ = api.last


def test_concurrent_requests(api: FakeAnthropic) -> None:
    api.default = text("same", chunk_delay=0.01)
    client = make_client(api)
    results: list[str] = []
    lock = threading.Lock()

    def call() -> None:
        with client.messages.stream(model=MODEL, max_tokens=5, messages=HELLO) as s:
            out = s.get_final_text()
        with lock:
            results.append(out)

    threads = [threading.Thread(target=call) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert results == ["same"] * 8
    assert len(api.requests) == 8


def test_reset(api: FakeAnthropic) -> None:
    api.queue(text("a"))
    create(make_client(api))
    api.queue(text("b"))
    api.reset()
    assert api.requests == [] and api.pending == 0


@pytest.mark.boundary
def test_restart_gets_new_port() -> None:
    api = FakeAnthropic()
    with api:
        first = api.base_url
        create(make_client(api))
    with pytest.raises(RuntimeError):
        _ = api.base_url
    with api:
        assert api.base_url.startswith("http://127.0.0.1:")
        assert create(make_client(api)).content[0].text == "ok"  # type: ignore[union-attr]
    assert first.startswith("http://127.0.0.1:")


def test_reply_constructor_validation() -> None:
    with pytest.raises(ValueError):
        text("abc", chunks=["a", "b"])
    with pytest.raises(ValueError):
        text("abc", chunks=0)
    with pytest.raises(ValueError):
        multi([{"type": "image"}])


# --------------------------------------------------------------------------------------
# Request validation
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        (
            [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
                },
                {"role": "user", "content": "no result"},
            ],
            "`tool_use` ids were found without `tool_result` blocks immediately after: t1",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "t9", "content": "r"}],
                }
            ],
            "unexpected `tool_use_id` found in `tool_result` blocks: t9",
        ),
        (
            [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "first"},
                        {"type": "tool_result", "tool_use_id": "t1", "content": "r"},
                    ],
                },
            ],
            "tool_result blocks must come first",
        ),
        ([{"role": "user", "content": ""}], "must have non-empty content"),
        ([{"role": "user", "content": [{"type": "text", "text": ""}]}], "must be non-empty"),
        ([{"role": "tool", "content": "x"}], "messages.0.role"),
        ([{"role": "system", "content": [{"type": "image"}]}], "messages.0.content.0.type"),
        (
            [{"role": "user", "content": "x"}, {"role": "assistant", "content": "pre "}],
            "trailing whitespace",
        ),
    ],
)
def test_invalid_requests_rejected_without_consuming_queue(
    api: FakeAnthropic, messages: list[dict[str, Any]], fragment: str
) -> None:
    api.queue(text("kept"))
    with pytest.raises(anthropic.BadRequestError) as info:
        create(make_client(api), messages=messages)
    assert info.value.type == "invalid_request_error"
    assert fragment in (info.value.api_message or "")
    assert api.pending == 1
    assert api.last.reply is not None and api.last.reply.status == 400


def test_valid_tool_round_trip_accepted(api: FakeAnthropic) -> None:
    api.queue(tool_use("lookup", {"k": "v"}, id="toolu_A"), text("done"))
    client = make_client(api)
    tools = [{"name": "lookup", "input_schema": {"type": "object", "properties": {}}}]
    first = create(client, tools=tools)
    messages: list[Any] = [
        *HELLO,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_A", "content": "v=1"},
                {"type": "text", "text": "thanks"},
            ],
        },
    ]
    second = create(client, tools=tools, messages=messages)
    assert second.content[0].text == "done"  # type: ignore[union-attr]


def test_system_role_messages_accepted(api: FakeAnthropic) -> None:
    # SDK 2.x's MessageParam includes {"role": "system"}; it must not break tool pairing.
    api.queue(tool_use("lookup", {}, id="toolu_S"), text("done"))
    client = make_client(api)
    first = create(client)
    messages: list[Any] = [
        {"role": "system", "content": "Be brief."},
        *HELLO,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "system", "content": [{"type": "text", "text": "Tools changed."}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_S"}]},
    ]
    assert create(client, messages=messages).content[0].text == "done"  # type: ignore[union-attr]
    assert api.last.body["messages"][0] == {"role": "system", "content": "Be brief."}


def test_bad_tool_definitions_rejected(api: FakeAnthropic) -> None:
    client = make_client(api)
    with pytest.raises(anthropic.BadRequestError, match="String should match pattern"):
        create(client, tools=[{"name": "bad name", "input_schema": {"type": "object"}}])
    dup = {"name": "a", "input_schema": {"type": "object"}}
    with pytest.raises(anthropic.BadRequestError, match="unique"):
        create(client, tools=[dup, dup])


@pytest.mark.boundary
def test_validation_can_be_disabled() -> None:
    with FakeAnthropic(validate=False) as api:
        msg = create(make_client(api), messages=[{"role": "user", "content": ""}])
        assert msg.content[0].text == "ok"  # type: ignore[union-attr]


@pytest.mark.boundary
def test_missing_api_key_is_401() -> None:
    with FakeAnthropic() as api, httpx2.Client() as client:
        body = {"model": MODEL, "max_tokens": 5, "messages": HELLO}
        resp = client.post(f"{api.base_url}/v1/messages", json=body)
    assert resp.status_code == 401
    assert resp.json()["error"]["type"] == "authentication_error"


# --------------------------------------------------------------------------------------
# Network guard
# --------------------------------------------------------------------------------------

BLOCK_MSG = "network access outside loopback blocked by the test guard"


def test_netguard_blocks_non_loopback() -> None:
    assert netguard.is_installed()
    assert netguard.install() is False  # idempotent
    with pytest.raises(RuntimeError, match=f"{BLOCK_MSG}: 10.255.255.1:80"):
        socket.create_connection(("10.255.255.1", 80), timeout=1)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(netguard.NetworkBlockedError):
            sock.connect(("10.255.255.1", 80))
        with pytest.raises(netguard.NetworkBlockedError):
            sock.connect_ex(("8.8.8.8", 53))
    with pytest.raises(RuntimeError, match=BLOCK_MSG):
        socket.create_connection(("api.anthropic.com", 443), timeout=1)
    assert "10.255.255.1:80" in netguard.BLOCKED


def test_netguard_blocks_sdk_to_real_api() -> None:
    client = anthropic.Anthropic(
        base_url="https://api.anthropic.com", api_key="test-key", max_retries=0
    )
    with pytest.raises(anthropic.APIConnectionError) as info:
        create(client)
    cause: BaseException | None = info.value
    while cause is not None and not isinstance(cause, netguard.NetworkBlockedError):
        cause = cause.__cause__ or cause.__context__
    assert cause is not None, "the SDK error should be caused by the guard"


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "127.8.9.10", "::1", "[::1]"])
def test_netguard_allows_loopback_names(host: str) -> None:
    assert netguard.is_allowed(host)


@pytest.mark.parametrize("host", ["10.255.255.1", "0.0.0.0", "::", "example.com", "::ffff:8.8.8.8"])
def test_netguard_refuses_others(host: str) -> None:
    assert not netguard.is_allowed(host)


def test_netguard_allows_loopback_connections(api: FakeAnthropic) -> None:
    with socket.create_connection(("127.0.0.1", api.port), timeout=1):
        pass
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        assert sock.connect_ex(("127.0.0.1", api.port)) == 0


def test_netguard_allows_unix_sockets(tmp_path: Any) -> None:
    path = str(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(path)
        server.listen(1)
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.connect(path)


def test_netguard_uninstall_and_reinstall() -> None:
    connect = socket.socket.connect
    assert netguard.uninstall() is True
    try:
        assert not netguard.is_installed()
        assert socket.socket.connect is not connect
    finally:
        assert netguard.install() is True
    assert netguard.is_installed()


def test_subprocess_env_prepends_site_dir() -> None:
    env = netguard.subprocess_env({"PYTHONPATH": "/a", "X": "1"})
    assert env["PYTHONPATH"].split(os.pathsep) == [str(netguard.SITE_DIR), "/a"]
    assert env["X"] == "1"
    assert netguard.subprocess_env(env)["PYTHONPATH"] == env["PYTHONPATH"]
    assert netguard.subprocess_env({})["PYTHONPATH"] == str(netguard.SITE_DIR)
    assert (netguard.SITE_DIR / "sitecustomize.py").is_file()


@pytest.mark.boundary
def test_subprocess_is_guarded(api: FakeAnthropic) -> None:
    code = (
        "import socket, sys\n"
        f"socket.create_connection(('127.0.0.1', {api.port}), timeout=1).close()\n"
        "print('loopback ok', flush=True)\n"
        "import netguard; assert netguard.is_installed()\n"
        "socket.create_connection(('10.255.255.1', 80), timeout=1)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        env=netguard.subprocess_env(os.environ),
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert proc.returncode != 0
    assert proc.stdout == "loopback ok\n"
    assert "RuntimeError" in proc.stderr or "NetworkBlockedError" in proc.stderr
    assert f"{BLOCK_MSG}: 10.255.255.1:80" in proc.stderr


def test_the_fake_refuses_a_forced_tool_it_was_not_given(api):
    from fakeapi import validate_messages_request

    body = {
        "model": "m",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hi"}],
        "tool_choice": {"type": "tool", "name": "record_facts"},
    }
    assert "not one of the request's tools" in validate_messages_request(body)
