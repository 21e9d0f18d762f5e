"""A turn's last step: the reply is committed to the ledger with its status — ``ok``,
``interrupted`` with the partial text, ``error`` with what arrived before a failure — and the
tools it ran, its cost and the turn it answers."""

from __future__ import annotations

from typing import Any

from ..errors import RheoError
from ..memory.ledger import turns as ledger
from ..memory.store import crash
from ..memory.store.errors import NotFound
from ..memory.store.timeutil import to_stored
from ..providers.base import ProviderError
from ..providers.redact import redact
from ..services import Services
from .converse import Reply

_FINISHED = ("", "end_turn", "tool_use", "stop_sequence")
"""Stop reasons of a reply that ended normally (or never got as far): not recorded."""


def record_reply(
    rt: Services,
    user_turn: ledger.Turn,
    reply: Reply,
    status: str,
    *,
    content: str | None = None,
    error: ProviderError | None = None,
    stored: bool = True,
) -> ledger.Turn:
    """Append the assistant turn answering ``user_turn`` and return it: ``content`` (default
    the reply's text as it arrived), ``status``, the reply's model and usage; meta holds the
    tool calls, the error (kind and message, credentials redacted), the cost when the
    backend reports one, ``stop_reason`` when the model stopped for another reason than
    finishing (``max_tokens``: the reply was cut at the limit), ``reply_to`` and the
    assistant talked to.

    ``stored`` False (incognito): nothing is written and the turn is returned with id 0.
    Raises StoreError when the ledger cannot be written (Busy after the bounded wait),
    SessionPurged when ``rheo purge`` erased the question's session while the reply came.
    """
    meta: dict[str, Any] = {}
    if reply.tool_calls:
        meta["tool_calls"] = reply.tool_calls
    if error is not None:
        # The ledger cannot be changed later: no credential (a key, a password in a base
        # URL, a token in a query string) may enter it with an error message.
        meta["error"] = {k: redact(v) for k, v in (("kind", error.kind), ("message", str(error)))}
    if reply.stop_reason not in _FINISHED:
        meta["stop_reason"] = reply.stop_reason
    if reply.usage.cost_usd is not None:  # reported by Claude Code
        meta["cost_usd"] = round(reply.usage.cost_usd, 6)
    meta["reply_to"] = user_turn.id
    crash.reach("reply.record")
    if rt.assistant_name is not None:
        meta["assistant"] = rt.assistant_name
    text = reply.text if content is None else content
    usage = ledger.Usage(**reply.usage.counts())
    if not stored:
        return ledger.Turn(
            id=0,
            profile=rt.profile,
            session_id=0,
            role="assistant",
            content=text,
            ts=to_stored(rt.now()),
            model=reply.model,
            status=status,
            usage=usage,
            meta=meta,
        )
    # The reply is in hand: `db.write` waits for another process's lock rather than lose it.
    try:
        appended = ledger.append_turn(
            rt.conn,
            profile=rt.profile,
            role="assistant",
            content=text,
            now=rt.now(),
            gap_s=rt.settings.gap_s,
            session_id=user_turn.session_id,
            model=reply.model,
            status=status,
            usage=usage,
            meta=meta,
        )
    except NotFound:  # a runtime race, not a wrong argument: the id was rheo's own
        raise SessionPurged(
            "the session of this question was purged meanwhile ('rheo purge' ran while the "
            "reply came): the reply was not stored"
        ) from None
    return appended.turn


class SessionPurged(RheoError):
    """The question's session was erased by ``rheo purge`` while its reply was on its way:
    the reply cannot be stored (exit 1, a runtime failure)."""
