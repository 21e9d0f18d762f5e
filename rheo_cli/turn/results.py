"""What a turn ends in: a `TurnResult`, or `TurnFailed` / `TurnInterrupted` with the stored
partial reply, and the ``rheo ask --json`` shape of each."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..memory.context.assemble import Context
from ..memory.ledger import turns as ledger
from ..providers.base import ProviderError, Usage


@dataclass(frozen=True)
class NotStored:
    """Why a turn that should have been stored was not (memory never breaks the chat: the
    reply still comes). ``error`` is the StoreError met (a DatabaseError when a statement
    failed); ``unopened``: the store could not even be opened, so the reply was made without memory;
    ``reply_only``: the person's message was stored, only the reply could not be."""

    error: Exception
    unopened: bool = False
    reply_only: bool = False


@dataclass
class TurnResult:
    """What a turn produced: the reply text, the two stored turns, usage summed over calls,
    why the model stopped (``stop_reason``), the request's ``max_tokens`` limit and the
    provider's name (``anthropic``, ``openai``, ``claude-code``...)."""

    reply: str
    user_turn: ledger.Turn
    assistant_turn: ledger.Turn
    usage: Usage
    model: str
    context: Context
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str = "end_turn"
    max_tokens: int = 0
    provider: str = ""

    @property
    def cut(self) -> bool:
        """True when the reply was cut at the max_tokens limit (stored as ``interrupted``)."""
        return self.stop_reason == "max_tokens"

    def to_json(self) -> dict[str, Any]:
        """``rheo ask --json``: reply, session_id, turn_ids, usage, model, status, error,
        stop_reason, context_tokens."""
        return {
            **_shape(self.user_turn, self.assistant_turn, self.reply, self.usage.counts()),
            "model": self.model,
            "status": self.assistant_turn.status,
            "error": None,
            "stop_reason": self.stop_reason,
            "context_tokens": self.context.context_tokens,
        }


class TurnFailed(Exception):
    """The model call failed after the person's turn was stored; ``turn`` is the stored
    error turn (with whatever text arrived), ``user_turn`` the person's."""

    def __init__(self, error: ProviderError, turn: ledger.Turn, user_turn: ledger.Turn) -> None:
        super().__init__(str(error))
        self.error = error
        self.turn = turn
        self.user_turn = user_turn


class TurnInterrupted(Exception):
    """Ctrl-C during the reply; ``turn`` is the stored partial reply (status interrupted)."""

    def __init__(
        self, turn: ledger.Turn, user_turn: ledger.Turn, cause: BaseException | None = None
    ) -> None:
        super().__init__("interrupted")
        self.turn = turn
        self.user_turn = user_turn
        self.cause = cause


def outcome_json(user_turn: ledger.Turn, turn: ledger.Turn, error: str | None) -> dict[str, Any]:
    """``rheo ask --json`` for a reply that did not complete: the partial text, its status,
    the error and the stop reason stored with it (None when none), with the same keys as a
    successful reply."""
    usage = turn.usage or ledger.Usage()
    return {
        **_shape(user_turn, turn, turn.content, usage.to_json()),
        "model": turn.model,
        "status": turn.status,
        "error": error,
        "stop_reason": turn.meta.get("stop_reason") if isinstance(turn.meta, dict) else None,
    }


def _shape(
    user_turn: ledger.Turn, turn: ledger.Turn, reply: str, usage: dict[str, int]
) -> dict[str, Any]:
    """The keys every ``rheo ask --json`` answer starts with: reply, session_id (None when
    incognito), turn_ids (the stored ones), usage."""
    return {
        "reply": reply,
        "session_id": user_turn.session_id or None,
        "turn_ids": [t for t in (user_turn.id, turn.id) if t],
        "usage": usage,
    }
