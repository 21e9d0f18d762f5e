"""One turn of conversation: store the message, assemble the context, call the model, record.

The order is the promise of "nothing lost": the person's turn is committed before the model
is called; the reply is committed with its status whatever happens (``ok``, ``interrupted``
with the partial text on Ctrl-C, ``error`` with what arrived before a failure).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .. import prompts
from ..memory.context import assemble as context_mod
from ..memory.context.assemble import Context
from ..memory.ledger import turns as ledger
from ..memory.store import crash, health
from ..memory.store.errors import EngineError
from ..providers.base import (
    ChatRequest,
    Finished,
    Provider,
    ProviderError,
    SystemBlock,
    TextDelta,
    ToolCall,
    Usage,
)
from ..runtime import Runtime

_SURROGATES = re.compile("[\ud800-\udfff]")
MAX_TOOL_ROUNDS = 6
RECORD_ATTEMPTS = 4
"""Tries at storing a reply while another process holds the database (each waits the busy
timeout, 30 s)."""
"""How many model calls one turn may make while Claude uses tools."""


@dataclass
class TurnResult:
    """What a turn produced: the reply text, the two stored turns, usage summed over calls."""

    reply: str
    user_turn: ledger.Turn
    assistant_turn: ledger.Turn
    usage: Usage
    model: str
    context: Context
    tool_calls: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``rheo ask --json``: reply, session_id, turn_ids, usage, model, status, error."""
        return {
            "reply": self.reply,
            "session_id": self.user_turn.session_id,
            "turn_ids": [self.user_turn.id, self.assistant_turn.id],
            "usage": {
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
                "cache_read_tokens": self.usage.cache_read_tokens,
                "cache_write_tokens": self.usage.cache_write_tokens,
            },
            "model": self.model,
            "status": self.assistant_turn.status,
            "error": None,
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
    """``rheo ask --json`` for a reply that did not complete: the partial text, its status and
    the error, with the same keys as a successful reply."""
    usage = turn.usage or ledger.Usage()
    return {
        "reply": turn.content,
        "session_id": user_turn.session_id,
        "turn_ids": [user_turn.id, turn.id],
        "usage": usage.to_json(),
        "model": turn.model,
        "status": turn.status,
        "error": error,
    }


def clock_text(now: datetime) -> str:
    """The system prompt's clock line, e.g. ``Sunday 29 November 2026, 21:30 (UTC+01:00)``."""
    offset = now.strftime("%z")
    zone = f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"
    name = now.tzname()
    if name and not name.startswith(("UTC", "+", "-")):
        zone += f", {name}"
    return (
        f"Current date and time: {now.strftime('%A')} {now.day} {now.strftime('%B %Y, %H:%M')} "
        f"({zone})."
    )


def build_request(
    ctx: Context, *, model: str, max_tokens: int, now: datetime, tools: list[Any] | None = None
) -> ChatRequest:
    """The Messages-API request for an assembled context.

    Prompt-cache layout, stable parts first: tools and the static system prompt (cache
    breakpoint), then the clock line; in the user message the stable sections (OPEN ITEMS,
    EPISODIC MEMORY; second breakpoint), then the rest, ``---`` and the message.
    """
    system = [SystemBlock(prompts.load("system"), cache=True), SystemBlock(clock_text(now))]
    content: list[dict[str, Any]] = []
    stable = ctx.stable_text()
    if stable:
        content.append(
            {"type": "text", "text": stable + "\n\n", "cache_control": {"type": "ephemeral"}}
        )
    content.append({"type": "text", "text": ctx.volatile_text()})
    return ChatRequest(
        model=model,
        system=system,
        messages=[{"role": "user", "content": content}],
        max_tokens=max_tokens,
        tools=list(tools or []),
    )


ToolRunner = Callable[[ToolCall, ledger.Turn], str]


class Assistant:
    """Runs turns for one runtime. ``tools``/``run_tool`` plug in the memory tools."""

    def __init__(
        self,
        rt: Runtime,
        *,
        tools: list[Any] | None = None,
        run_tool: ToolRunner | None = None,
        after_reply: Callable[[ledger.Turn, ledger.Turn], None] | None = None,
        # after_reply runs for complete and interrupted replies (not failed ones).
        on_session_closed: Callable[[int], None] | None = None,
    ) -> None:
        self.rt = rt
        self.tools = tools or []
        self.run_tool = run_tool
        self.after_reply = after_reply
        self.on_session_closed = on_session_closed
        self.repairs: list[str] = []
        """One-line notes of store repairs made during the last turn (shown to the person)."""

    def store_message(self, message: str, *, new_session: bool = False) -> ledger.Appended:
        """Commit the person's turn (session detection included) and return it.

        If the insert fails on a damaged or missing search index (an FTS5 index derived from
        the turns), the indexes are rebuilt from the tables and the insert tried once more,
        with a note in `repairs`. Raises sqlite3.Error when the ledger cannot be written."""

        def append() -> ledger.Appended:
            return ledger.append_turn(
                self.rt.conn,
                profile=self.rt.profile,
                role="user",
                content=message,
                now=self.rt.now(),
                gap_s=self.rt.settings.gap_s,
                new_session=new_session,
            )

        try:
            appended = append()
        except sqlite3.DatabaseError as exc:
            text = str(exc).lower()
            if any(w in text for w in ("locked", "busy", "readonly", "read-only", "full")):
                raise
            try:
                rebuilt = health.rebuild_indexes(self.rt.conn)
            except sqlite3.DatabaseError:
                raise exc from None
            appended = append()
            self.repairs.append(
                f"the search index was damaged ({' '.join(str(exc).split())[:120]}); "
                f"rebuilt {', '.join(rebuilt)} from the ledger"
            )
        if appended.closed_session is not None and self.on_session_closed is not None:
            self.on_session_closed(appended.closed_session.id)
        return appended

    def context_for(self, user_turn: ledger.Turn) -> Context:
        """Assemble the context for a stored user turn (its own text is the message).

        Memory never stops the chat: parts of the store that cannot be read are left out with
        a note, and if nothing can be read the message goes alone, with a note."""
        try:
            ctx = context_mod.assemble(
                self.rt.conn,
                profile=self.rt.profile,
                message=user_turn.content,
                now=self.rt.now(),
                settings=self.rt.settings,
                session_id=user_turn.session_id,
                before_turn_id=user_turn.id,
                tolerant=True,
            )
        except (sqlite3.DatabaseError, EngineError) as exc:
            ctx = Context(
                sections=[],
                message=user_turn.content,
                budget=self.rt.settings.budget_tokens,
                session_id=user_turn.session_id,
                notes=[
                    f"memory unreadable ({' '.join(str(exc).split())[:160]}); answering "
                    "without it; 'rheo doctor' checks the store"
                ],
            )
        ctx.notes[:0] = self.repairs
        return ctx

    def turn(
        self,
        message: str,
        *,
        new_session: bool = False,
        on_text: Callable[[str], None] | None = None,
        on_context: Callable[[Context], None] | None = None,
        provider: Provider | None = None,
    ) -> TurnResult:
        """Run one turn. ``on_text`` receives reply text as it streams.

        Raises TurnFailed (model error; an ``error`` turn was stored) or TurnInterrupted
        (Ctrl-C; the partial reply was stored as ``interrupted``). The person's turn is stored
        in both cases.
        """
        self.repairs = []
        user_turn = self.store_message(message, new_session=new_session).turn
        ctx = self.context_for(user_turn)
        if on_context is not None:
            on_context(ctx)
        backend = provider or self.rt.provider()
        request = build_request(
            ctx,
            model=self.rt.model,
            max_tokens=self.rt.config.max_tokens,
            now=self.rt.now(),
            tools=self.tools,
        )
        parts: list[str] = []
        usage = Usage()
        model = self.rt.model
        calls: list[dict[str, Any]] = []
        try:
            for _ in range(MAX_TOOL_ROUNDS):
                pending: list[ToolCall] = []
                finished: Finished | None = None
                for event in backend.stream(request):
                    if isinstance(event, TextDelta):
                        # A lone surrogate cannot be stored or printed: replace it.
                        delta = _SURROGATES.sub("\ufffd", event.text)
                        parts.append(delta)
                        if on_text is not None:
                            on_text(delta)
                        crash.reach("reply.delta")
                    elif isinstance(event, ToolCall):
                        pending.append(event)
                    elif isinstance(event, Finished):
                        finished = event
                if finished is None:
                    raise ProviderError("stream_broken", "the reply ended without finishing")
                usage = usage + finished.usage
                model = finished.model or model
                if finished.stop_reason != "tool_use" or not pending or self.run_tool is None:
                    break
                results = []
                for call in pending:
                    output = self.run_tool(call, user_turn)
                    calls.append({"name": call.name, "input": call.input, "result": output})
                    results.append(
                        {"type": "tool_result", "tool_use_id": call.id, "content": output}
                    )
                request.messages.append({"role": "assistant", "content": finished.content})
                request.messages.append({"role": "user", "content": results})
                if parts and not parts[-1].endswith("\n"):
                    parts.append("\n\n")
                    if on_text is not None:
                        on_text("\n\n")
        except KeyboardInterrupt as stop:
            turn = self._record(user_turn, "".join(parts), "interrupted", usage, model, calls)
            if self.after_reply is not None:
                self.after_reply(user_turn, turn)
            raise TurnInterrupted(turn, user_turn, stop) from None
        except ProviderError as exc:
            turn = self._record(
                user_turn,
                "".join(parts),
                "error",
                usage,
                model,
                calls,
                error={"kind": exc.kind, "message": str(exc)},
            )
            raise TurnFailed(exc, turn, user_turn) from None
        reply = "".join(parts).strip()
        if not reply:
            error = ProviderError("other", "the model answered with no text")
            turn = self._record(
                user_turn,
                "",
                "error",
                usage,
                model,
                calls,
                error={"kind": error.kind, "message": str(error)},
            )
            raise TurnFailed(error, turn, user_turn)
        assistant_turn = self._record(user_turn, reply, "ok", usage, model, calls)
        if self.after_reply is not None:
            self.after_reply(user_turn, assistant_turn)
        return TurnResult(
            reply=reply,
            user_turn=user_turn,
            assistant_turn=assistant_turn,
            usage=usage,
            model=model,
            context=ctx,
            tool_calls=calls,
        )

    def _record(
        self,
        user_turn: ledger.Turn,
        content: str,
        status: str,
        usage: Usage,
        model: str,
        calls: list[dict[str, Any]],
        *,
        error: dict[str, str] | None = None,
    ) -> ledger.Turn:
        meta: dict[str, Any] = {}
        if calls:
            meta["tool_calls"] = calls
        if error:
            meta["error"] = error
        meta["reply_to"] = user_turn.id
        crash.reach("reply.record")
        for attempt in range(RECORD_ATTEMPTS):
            try:
                return ledger.append_turn(
                    self.rt.conn,
                    profile=self.rt.profile,
                    role="assistant",
                    content=content,
                    now=self.rt.now(),
                    gap_s=self.rt.settings.gap_s,
                    session_id=user_turn.session_id,
                    model=model,
                    status=status,
                    usage=ledger.Usage(
                        usage.input_tokens,
                        usage.output_tokens,
                        usage.cache_read_tokens,
                        usage.cache_write_tokens,
                    ),
                    meta=meta,
                ).turn
            except sqlite3.OperationalError as exc:
                # The reply is in hand: wait again rather than lose it.
                if "locked" not in str(exc).lower() or attempt == RECORD_ATTEMPTS - 1:
                    raise
        raise AssertionError("unreachable")


def preview(
    rt: Runtime, message: str, *, budget: int | None = None, tools: list[Any] | None = None
) -> dict[str, Any]:
    """Assemble the context for ``message`` (not stored) and the request it would make.

    Returns ``{"system": [...], "messages": [...], "sections": [{name, text, tokens, lines}],
    "context_tokens", "message_tokens", "budget", "session_id", "model", "notes"}``.
    """
    now = rt.now()
    ctx = context_mod.assemble(
        rt.conn,
        profile=rt.profile,
        message=message,
        now=now,
        settings=rt.settings,
        budget=budget,
    )
    request = build_request(
        ctx, model=rt.model, max_tokens=rt.config.max_tokens, now=now, tools=tools
    )
    return {
        "model": rt.model,
        "session_id": ctx.session_id,
        "budget": ctx.budget,
        "context_tokens": ctx.context_tokens,
        "message_tokens": ctx.message_tokens,
        "sections": [
            {
                "name": s.name,
                "text": s.render(),
                "tokens": s.tokens,
                "dropped": s.dropped,
                "lines": [
                    {
                        "text": ln.text,
                        "source": ln.source,
                        "rank": round(ln.rank, 4),
                        "why": ln.why,
                        "turn_ids": list(ln.turn_ids),
                        "tokens": ln.tokens,
                    }
                    for ln in s.lines
                ],
            }
            for s in ctx.sections
        ],
        "system": [{"text": b.text, "cache": b.cache} for b in request.system],
        "tools": [t.name for t in request.tools],
        "messages": request.messages,
        "notes": ctx.notes,
    }
