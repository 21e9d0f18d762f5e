"""An in-process model for tests above the provider (like llm's mock model): it is fed canned
replies, answers them in order, and records every request it was asked.

Tests that are about the turn, the context, memory or a command's output use it instead of
the HTTP fake and the SDK; tests about the provider itself, the wire and the process
boundary keep using `fakeapi` through the real SDK (marked ``boundary`` outside
``tests/providers``).

It answers as `AnthropicProvider` does once the SDK has done its part: text in pieces, then
a `ToolCall` per tool call, then one `Finished` with the stop reason, usage and model; a
`complete` forced to call a tool returns that call's input as JSON text. Its errors are the
`ProviderError` the real provider raises after its own retries (`api_error` words them as
it does), so a canned error is what the caller finally sees: nothing here retries.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rheo_cli.providers.base import (
    ChatRequest,
    Event,
    Finished,
    ProviderError,
    TextDelta,
    ToolCall,
    Usage,
)
from rheo_cli.providers.sdk_errors import Endpoint, status_error

_NOTHING_FOUND = {"record_facts": '{"facts": []}', "record_consolidation": '{"actions": []}'}

ANTHROPIC = Endpoint("the API", "the API at https://api.anthropic.com", "ANTHROPIC_API_KEY")
"""Who `api_error` names: the Anthropic API, as `AnthropicProvider` names it."""


@dataclass
class Canned:
    """One reply: text (streamed in ``chunks`` pieces), tool calls (``(name, input)``, after
    the text), or an error to raise (after ``text`` has streamed, so partial replies can be
    tested). ``stop_reason`` defaults to ``tool_use`` with tool calls, else ``end_turn``
    (``max_tokens``: a reply cut at the output limit); ``model`` to the request's model (the
    model that served); ``usage`` is what the provider reports; ``delay`` seconds pass before
    the reply starts (a slow model; the request is recorded first), ``chunk_delay`` seconds
    between two pieces of streamed text."""

    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: ProviderError | None = None
    chunks: int = 3
    usage: Usage = Usage(input_tokens=10, output_tokens=5)
    stop_reason: str | None = None
    model: str | None = None
    delay: float = 0.0
    chunk_delay: float = 0.0


Answer = str | Canned
Handler = Callable[[ChatRequest], Answer]


def structured(payload: dict[str, Any]) -> Canned:
    """The answer of a model made to call a tool (``request.tool_choice``): `complete` returns
    the call's input as JSON text, as the real provider does; a request that forces nothing
    gets the same JSON as its text (a model asked for JSON in the prompt)."""
    return Canned(json.dumps(payload, ensure_ascii=False))


def facts(*found: dict[str, Any]) -> Canned:
    """An extractor's answer carrying these facts (the forced ``record_facts`` call's input)."""
    return structured({"facts": list(found)})


def api_error(status: int, err_type: str = "", message: str = "") -> ProviderError:
    """The error `AnthropicProvider` raises for an HTTP ``status`` answered with error
    ``err_type`` and ``message`` (after its retries, for the retryable ones): same kind,
    same words."""
    return status_error(ANTHROPIC, status, [err_type], message)


def broken(after_text: bool = True) -> ProviderError:
    """The error of a reply stream that broke off (after some text, by default) as
    `AnthropicProvider` reports it."""
    if after_text:
        return ProviderError("stream_broken", "the reply stream broke off before it ended")
    return ProviderError("connection", f"cannot reach {ANTHROPIC.address}: connection reset")


class FakeProvider:
    """Answers with canned replies in order; when none is queued ``handler(request)`` decides
    if set (as `fakeapi.FakeAnthropic.handler`), else a request forcing ``record_facts`` or
    ``record_consolidation`` finds nothing, else ``default`` forever. ``requests`` holds every
    ChatRequest it was given (streamed or completed), in order; ``streamed`` says which of
    them were streamed."""

    name = "fake"

    def __init__(self, *replies: Answer, default: Answer = "ok") -> None:
        self.queue: list[Canned] = [_canned(r) for r in replies]
        self.default: Answer = default
        self.handler: Handler | None = None
        self.requests: list[ChatRequest] = []
        self.streamed: list[bool] = []
        self.closed = False
        self.on_retry: Any = None
        self._asked = threading.Condition()

    def add(self, *replies: Answer) -> None:
        """Queue more replies."""
        self.queue.extend(_canned(r) for r in replies)

    @property
    def last(self) -> ChatRequest:
        """The last request asked."""
        return self.requests[-1]

    def wait_for_requests(self, n: int, timeout: float = 10.0) -> None:
        """Wait until ``n`` requests have been asked (from other threads); TimeoutError else."""
        with self._asked:
            if not self._asked.wait_for(lambda: len(self.requests) >= n, timeout):
                raise TimeoutError(f"{len(self.requests)} of {n} requests after {timeout} s")

    def _next(self, request: ChatRequest, *, streamed: bool) -> Canned:
        with self._asked:
            self.requests.append(request)
            self.streamed.append(streamed)
            self._asked.notify_all()
        if self.queue:
            reply = self.queue.pop(0)
        elif self.handler is not None:
            reply = _canned(self.handler(request))
        elif not streamed and request.tool_choice in _NOTHING_FOUND:
            reply = Canned(_NOTHING_FOUND[request.tool_choice])
        else:
            reply = _canned(self.default)
        if reply.delay:
            time.sleep(reply.delay)
        return reply

    def stream(self, request: ChatRequest) -> Iterator[Event]:
        """Yield the next canned reply as TextDelta pieces (and ToolCalls), then Finished."""
        reply = self._next(request, streamed=True)
        text = reply.text
        step = max(1, -(-len(text) // max(1, reply.chunks)))
        for i in range(0, len(text), step):
            if i and reply.chunk_delay:
                time.sleep(reply.chunk_delay)
            yield TextDelta(text[i : i + step])
        if reply.error is not None:
            raise reply.error
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        for n, (name, args) in enumerate(reply.tool_calls):
            call = ToolCall(id=f"call_{len(self.requests)}_{n}", name=name, input=args)
            content.append({"type": "tool_use", "id": call.id, "name": name, "input": args})
            yield call
        stop = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
        yield Finished(
            stop_reason=stop,
            usage=reply.usage,
            model=reply.model or request.model,
            content=content,
        )

    def complete(self, request: ChatRequest) -> tuple[str, Usage, str]:
        """The next canned reply whole: ``(text, usage, model)``; raises its error if it has one.
        With ``request.tool_choice`` and a tool call of that name in the reply, the text is
        that call's input as JSON (as `AnthropicProvider.complete` returns it)."""
        reply = self._next(request, streamed=False)
        if reply.error is not None:
            raise reply.error
        text = reply.text
        for name, args in reply.tool_calls:
            if request.tool_choice is not None and name == request.tool_choice:
                text = json.dumps(args, ensure_ascii=False)
                break
        return text, reply.usage, reply.model or request.model

    def close(self) -> None:
        """Remember that the caller closed it (it still answers afterwards)."""
        self.closed = True

    def asked(self) -> list[str]:
        """The text of the last user message of every request, in order."""
        out = []
        for request in self.requests:
            content = request.messages[-1]["content"]
            if isinstance(content, str):
                out.append(content)
            else:
                out.append("".join(b.get("text", "") for b in content if isinstance(b, dict)))
        return out


def _canned(reply: Answer) -> Canned:
    return reply if isinstance(reply, Canned) else Canned(reply)
