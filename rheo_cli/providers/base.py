"""The provider contract: stream a reply (text, tool calls), report usage, fail in one line.

Requests and messages use the Anthropic Messages API's shapes (content blocks, ``tool_use`` and
``tool_result``), the common ground every backend here translates to and from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol


@dataclass(frozen=True)
class SystemBlock:
    """A piece of the system prompt; ``cache`` marks the end of a prompt-cache prefix."""

    text: str
    cache: bool = False


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: name, description, JSON Schema of its input."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass
class ChatRequest:
    """One model call. ``messages`` are Messages-API dicts (role, content blocks).

    ``tool_choice`` names one of ``tools`` that the model must call (structured output: the
    tool's ``input_schema`` is the shape wanted). A provider that can force a tool call does
    so (Anthropic: ``tool_choice={"type": "tool", "name": ...}``; OpenAI-compatible:
    ``tool_choice={"type": "function", "function": {"name": ...}}``) and its `complete`
    returns that call's input as JSON text; one that cannot ignores it and returns the
    reply's text, which callers read as JSON with repairs. None (default): no forcing.
    """

    model: str
    system: list[SystemBlock]
    messages: list[dict[str, Any]]
    max_tokens: int = 4096
    tools: list[ToolSpec] = field(default_factory=list)
    tool_choice: str | None = None


@dataclass(frozen=True)
class Usage:
    """Tokens a call used, as the provider reported them (the one Usage of providers).

    ``input_tokens`` are input tokens *not* read from a prompt cache (Anthropic's meaning;
    OpenAI-compatible providers subtract ``cached_tokens`` from ``prompt_tokens``);
    ``cache_read_tokens``/``cache_write_tokens`` are read from / written to the cache.
    ``cost_usd`` is set only when the backend reports a price (Claude Code does).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None

    def __add__(self, other: Usage) -> Usage:
        cost = (
            None
            if self.cost_usd is None and other.cost_usd is None
            else (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        )
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            cost,
        )

    def counts(self) -> dict[str, int]:
        """The four token counts by name (``input_tokens``, ``output_tokens``,
        ``cache_read_tokens``, ``cache_write_tokens``): the single conversion to the ledger's
        usage (``ledger.Usage(**usage.counts())``) and to JSON."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


@dataclass(frozen=True)
class TextDelta:
    """A piece of reply text, in order."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    """The model asks to run tool ``name`` with ``input``; ``id`` pairs it with its result."""

    id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Finished:
    """The call ended: why (``end_turn``, ``tool_use``, ``max_tokens``...), usage, model, and
    the assistant content blocks to send back when the tool loop continues."""

    stop_reason: str
    usage: Usage
    model: str
    content: list[dict[str, Any]]


Event = TextDelta | ToolCall | Finished

ErrorKind = Literal[
    "no_key",
    "auth",
    "permission",
    "rate_limit",
    "overloaded",
    "server",
    "bad_request",
    "too_large",
    "not_found",
    "timeout",
    "connection",
    "stream_broken",
    "malformed",
    "unavailable",
    "other",
]


class ProviderError(Exception):
    """A model call failed. ``kind`` classifies it; the message is one line for a person;
    ``retryable`` says whether trying again later may help."""

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.status = status
        self.retry_after_s = retry_after_s

    @property
    def retryable(self) -> bool:
        """True for rate limits, overload, server errors, timeouts and broken connections."""
        return self.kind in (
            "rate_limit",
            "overloaded",
            "server",
            "timeout",
            "connection",
            "stream_broken",
        )


class Provider(Protocol):
    """A model backend: everything the turn, the REPL and the extractor use.

    ``name`` is the backend's kind (``anthropic``, ``openai``, ``claude-code``...).
    ``on_retry``, when set, is told in one line when the provider waits before retrying.
    Nothing is imported or connected before the first call; ``close`` may be called any
    number of times, also when no call was made.
    """

    name: str
    on_retry: Callable[[str], None] | None

    def stream(self, request: ChatRequest) -> Iterator[Event]:
        """Yield TextDelta/ToolCall events, then exactly one Finished; raise ProviderError."""
        ...

    def complete(self, request: ChatRequest) -> tuple[str, Usage, str]:
        """One non-streamed call: ``(text, usage, model)``; raises ProviderError. With
        ``request.tool_choice`` the text is the forced call's input as JSON (when the model
        made it), else the reply's text."""
        ...

    def close(self) -> None:
        """Release connections or child processes (idempotent)."""
        ...
