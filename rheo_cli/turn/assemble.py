"""A turn's second step: the context for the stored message (boot-time injection, Rheo
article §07) and the request that carries it to the model."""

from __future__ import annotations

from typing import Any

from ..memory.context import assemble as context_mod
from ..memory.context.assemble import Context
from ..memory.ledger import turns as ledger
from ..memory.store.errors import EngineError
from ..providers.base import ChatRequest
from ..services import Services
from .request import build_request


class _NoMemory(Exception):
    """Raised inside `compose` to build the context without the store."""


def compose(
    rt: Services,
    user_turn: ledger.Turn,
    *,
    budget: int | None = None,
    stored: bool = True,
    tools: list[Any] | None = None,
    extra_system: str | None = None,
    notes: list[str] | None = None,
    memory: bool = True,
    requests: list[str] | None = None,
) -> tuple[Context, ChatRequest]:
    """The context and the model request for the person's turn ``user_turn``.

    ``stored`` False: the turn is not in the ledger (incognito), so no session history is
    read around it. ``budget`` (tokens) overrides the configured one; ``notes`` go first among
    the context's notes (e.g. repairs made while storing the turn); ``tools`` and
    ``extra_system`` (``rheo ask -s``) go into the request as they are. ``requests``: what
    rheo did for the explicit memory requests of the message ("forgot #12 (…)"), shown to the
    person as notes and told to the model without the forgotten words
    (`request.build_request`).

    Memory never stops the chat: parts of the store that cannot be read are left out with a
    note, and if nothing can be read the message goes alone, with a note. ``memory`` False
    (the store could not be opened, which the caller already says): the message goes alone,
    without a note. Raises ConfigError when the chosen assistant's prompt file cannot be read.
    """
    now = rt.now()
    stored = stored and bool(user_turn.id)
    try:
        if not memory:
            raise _NoMemory
        ctx = context_mod.assemble(
            rt.conn,
            profile=rt.profile,
            message=user_turn.content,
            now=now,
            settings=rt.settings,
            session_id=user_turn.session_id if stored else None,
            before_turn_id=user_turn.id if stored else None,
            budget=budget,
            assistant=rt.assistant_name,
            tolerant=True,
        )
    except _NoMemory:
        ctx = Context(
            sections=[],
            message=user_turn.content,
            budget=rt.settings.budget_tokens if budget is None else budget,
            session_id=None,
        )
    except EngineError as exc:  # the store's failures included (DatabaseError)
        ctx = Context(
            sections=[],
            message=user_turn.content,
            budget=rt.settings.budget_tokens if budget is None else budget,
            session_id=user_turn.session_id if stored else None,
            notes=[
                f"memory unreadable ({' '.join(str(exc).split())[:160]}); answering "
                "without it; 'rheo doctor' checks the store"
            ],
        )
    ctx.notes[:0] = [*(notes or []), *(f"memory: {r}" for r in requests or [])]
    ctx.requests = list(requests or [])
    request = build_request(
        ctx,
        model=rt.model,
        max_tokens=rt.config.max_tokens,
        now=now,
        tools=tools,
        extra_system=extra_system,
        assistant_prompt=rt.assistant_prompt(),
    )
    return ctx, request
