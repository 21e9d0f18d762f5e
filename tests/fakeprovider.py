"""An in-process model for tests above the provider (like llm's mock model): it is fed canned
replies, answers them in order, and records every request it was asked.

Tests that are about the turn, the context or memory use it instead of the HTTP fake and the
SDK; tests about the provider itself keep using `fakeapi` through the real SDK.
"""

from __future__ import annotations

from collections.abc import Iterator
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

_NOTHING_FOUND = {"record_facts": '{"facts": []}', "record_consolidation": '{"actions": []}'}


@dataclass
class Canned:
    """One reply: text (streamed in ``chunks`` pieces), tool calls, or an error to raise
    (after ``text`` has streamed, so partial replies can be tested)."""

    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: ProviderError | None = None
    chunks: int = 3
    usage: Usage = Usage(input_tokens=10, output_tokens=5)


class FakeProvider:
    """Answers with canned replies in order; then ``default`` forever. ``requests`` holds every
    ChatRequest it was given (streamed or completed), in order."""

    name = "fake"

    def __init__(self, *replies: str | Canned, default: str = "ok") -> None:
        self.queue: list[Canned] = [r if isinstance(r, Canned) else Canned(r) for r in replies]
        self.default = default
        self.requests: list[ChatRequest] = []
        self.closed = False
        self.on_retry: Any = None

    def add(self, *replies: str | Canned) -> None:
        """Queue more replies."""
        self.queue.extend(r if isinstance(r, Canned) else Canned(r) for r in replies)

    def _next(self, request: ChatRequest) -> Canned:
        self.requests.append(request)
        return self.queue.pop(0) if self.queue else Canned(self.default)

    def stream(self, request: ChatRequest) -> Iterator[Event]:
        """Yield the next canned reply as TextDelta pieces (and ToolCalls), then Finished."""
        reply = self._next(request)
        text = reply.text
        step = max(1, -(-len(text) // max(1, reply.chunks)))
        for i in range(0, len(text), step):
            yield TextDelta(text[i : i + step])
        if reply.error is not None:
            raise reply.error
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        for n, (name, args) in enumerate(reply.tool_calls):
            call = ToolCall(id=f"call_{len(self.requests)}_{n}", name=name, input=args)
            content.append({"type": "tool_use", "id": call.id, "name": name, "input": args})
            yield call
        stop = "tool_use" if reply.tool_calls else "end_turn"
        yield Finished(stop_reason=stop, usage=reply.usage, model=request.model, content=content)

    def complete(self, request: ChatRequest) -> tuple[str, Usage, str]:
        """The next canned reply whole: ``(text, usage, model)``; raises its error if it has one.
        With nothing queued, a request forcing ``record_facts`` or ``record_consolidation``
        gets an empty list of them (a model that found nothing)."""
        if not self.queue and request.tool_choice in _NOTHING_FOUND:
            self.requests.append(request)
            return (
                _NOTHING_FOUND[request.tool_choice],
                Usage(input_tokens=10, output_tokens=5),
                (request.model),
            )
        reply = self._next(request)
        if reply.error is not None:
            raise reply.error
        return reply.text, reply.usage, request.model

    def close(self) -> None:
        """Remember that the caller closed it."""
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
