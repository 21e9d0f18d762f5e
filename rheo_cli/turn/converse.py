"""A turn's third step: the conversation with the model, tool calls included (the tool loop).

What the model says is gathered in a `Reply` as it streams, so that when a call fails or the
person presses Ctrl-C, everything that arrived before is there to be recorded.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..memory.store import crash
from ..providers.base import (
    ChatRequest,
    Finished,
    Provider,
    ProviderError,
    TextDelta,
    ToolCall,
    Usage,
)

MAX_TOOL_ROUNDS = 6
"""How many model calls one turn may make while Claude uses tools."""

_SURROGATES = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class ToolOutput:
    """What a tool call gave the model: its text, and whether the call failed (``is_error``:
    the text is one line saying why; sent as the ``tool_result``'s ``is_error``). ``crash``
    holds an exception nobody expected, for a front end to log; None otherwise."""

    text: str
    is_error: bool = False
    crash: BaseException | None = field(default=None, repr=False, compare=False)


@dataclass
class Reply:
    """What the model said in one turn so far: the text in pieces, usage summed over its
    calls, the model that answered, the tools it ran (name, input, result) and why its last
    call stopped (``end_turn``, ``max_tokens``...; empty until a call finished)."""

    model: str
    parts: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = ""

    @property
    def cut(self) -> bool:
        """True when the reply stopped at the request's max_tokens limit (incomplete)."""
        return self.stop_reason == "max_tokens"

    @property
    def text(self) -> str:
        """The reply text as it arrived (not stripped)."""
        return "".join(self.parts)


def converse(
    backend: Provider,
    request: ChatRequest,
    reply: Reply,
    *,
    run_tool: Callable[[ToolCall], ToolOutput] | None = None,
    on_text: Callable[[str], None] | None = None,
) -> None:
    """Send ``request`` and stream the answer into ``reply`` (``on_text`` gets each piece of
    text); while the model stops to use tools and ``run_tool`` is given, run them (a failed
    call is a ``tool_result`` with ``is_error``), append the calls and their results to
    ``request.messages`` and call again, at most
    `MAX_TOOL_ROUNDS` calls in all.

    Raises ProviderError (``stream_broken`` when a stream ends without finishing) and lets
    KeyboardInterrupt through; ``reply`` then holds what arrived before.
    """
    for _ in range(MAX_TOOL_ROUNDS):
        pending: list[ToolCall] = []
        finished: Finished | None = None
        for event in backend.stream(request):
            if isinstance(event, TextDelta):
                # A lone surrogate cannot be stored or printed: replace it.
                delta = _SURROGATES.sub("\ufffd", event.text)
                reply.parts.append(delta)
                if on_text is not None:
                    on_text(delta)
                crash.reach("reply.delta")
            elif isinstance(event, ToolCall):
                pending.append(event)
            elif isinstance(event, Finished):
                finished = event
        if finished is None:
            raise ProviderError("stream_broken", "the reply ended without finishing")
        reply.usage = reply.usage + finished.usage
        reply.model = finished.model or reply.model
        reply.stop_reason = finished.stop_reason
        if finished.stop_reason != "tool_use" or not pending or run_tool is None:
            return
        results = []
        for call in pending:
            output = run_tool(call)
            done: dict[str, Any] = {"name": call.name, "input": call.input, "result": output.text}
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": call.id,
                "content": output.text,
            }
            if output.is_error:
                done["is_error"] = result["is_error"] = True
            reply.tool_calls.append(done)
            results.append(result)
        request.messages.append({"role": "assistant", "content": finished.content})
        request.messages.append({"role": "user", "content": results})
        if reply.parts and not reply.parts[-1].endswith("\n"):
            reply.parts.append("\n\n")
            if on_text is not None:
                on_text("\n\n")
