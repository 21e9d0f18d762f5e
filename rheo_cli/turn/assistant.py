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
from ..memory.store.db import tentative
from ..memory.store.errors import EngineError
from ..memory.store.timeutil import to_stored
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
from ..providers.redact import redact
from ..runtime import Runtime

_SURROGATES = re.compile("[\ud800-\udfff]")
MAX_TOOL_ROUNDS = 6
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
            "session_id": self.user_turn.session_id or None,  # None when incognito
            "turn_ids": [t for t in (self.user_turn.id, self.assistant_turn.id) if t],
            "usage": self.usage.counts(),
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
        "session_id": user_turn.session_id or None,
        "turn_ids": [t for t in (user_turn.id, turn.id) if t],
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
    ctx: Context,
    *,
    model: str,
    max_tokens: int,
    now: datetime,
    tools: list[Any] | None = None,
    extra_system: str | None = None,
    assistant_prompt: str = "",
) -> ChatRequest:
    """The Messages-API request for an assembled context.

    Prompt-cache layout, stable parts first: tools and the static system prompt, then the
    assistant's own prompt when one is chosen (cache breakpoint after the last of them), then
    the clock line and the person's ``extra_system`` instructions for this call (``rheo ask
    -s``); in the user message the stable sections (OPEN ITEMS, EPISODIC MEMORY; second
    breakpoint), then the rest, ``---`` and the message.
    """
    system = [SystemBlock(prompts.load("system"), cache=not assistant_prompt)]
    if assistant_prompt:
        system.append(SystemBlock(assistant_prompt, cache=True))
    system.append(SystemBlock(clock_text(now)))
    if extra_system and extra_system.strip():
        system.append(SystemBlock(extra_system.strip()))
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
        on_message: Callable[[ledger.Turn], None] | None = None,  # the stored person's turn
    ) -> None:
        self.on_message = on_message
        self.rt = rt
        self.tools = tools or []
        self.run_tool = run_tool
        self.after_reply = after_reply
        self.on_session_closed = on_session_closed
        self.extra_system: str | None = None
        """Instructions added after rheo's own system prompt for every turn (``ask -s``)."""
        self.incognito = False
        """Incognito: turns are answered with the context as usual, but nothing is stored —
        no turn, no session change, no extraction, and no tools (they could write memory)."""
        self.repairs: list[str] = []
        """One-line notes of store repairs made during the last turn (shown to the person)."""

    def store_message(
        self,
        message: str,
        *,
        new_session: bool = False,
        session_id: int | None = None,
        meta: dict[str, Any] | None = None,
    ) -> ledger.Appended:
        """Commit the person's turn (session detection included, unless ``session_id`` names
        the session to join) and return it. ``meta`` is stored with it (a front end's own
        ids, e.g. Telegram's update id), with the assistant talked to, from which rheo later
        knows whose memory the exchange feeds.

        If the insert fails on a damaged or missing search index (an FTS5 index derived from
        the turns), the indexes are rebuilt from the tables and the insert tried once more,
        with a note in `repairs`. Raises sqlite3.Error when the ledger cannot be written."""
        if self.rt.assistant_name is not None:
            meta = {**(meta or {}), "assistant": self.rt.assistant_name}

        def append() -> ledger.Appended:
            return ledger.append_turn(
                self.rt.conn,
                profile=self.rt.profile,
                role="user",
                content=message,
                now=self.rt.now(),
                gap_s=self.rt.settings.gap_s,
                new_session=new_session,
                session_id=session_id,
                meta=meta,
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
        if self.on_message is not None:
            self.on_message(appended.turn)
        return appended

    def context_for(self, user_turn: ledger.Turn, *, budget: int | None = None) -> Context:
        """Assemble the context for a stored user turn (its own text is the message)."""
        return self.compose(user_turn, budget=budget)[0]

    def compose(
        self, user_turn: ledger.Turn, *, budget: int | None = None
    ) -> tuple[Context, ChatRequest]:
        """The context and the model request for a stored user turn: the one code path behind
        a turn and its preview (`preview`), so ``rheo context`` shows what ``rheo ask`` sends.
        ``budget`` (tokens) overrides the configured one."""
        now = self.rt.now()
        stored = bool(user_turn.id) and not self.incognito
        # Memory never stops the chat: parts of the store that cannot be read are left out
        # with a note, and if nothing can be read the message goes alone, with a note.
        try:
            ctx = context_mod.assemble(
                self.rt.conn,
                profile=self.rt.profile,
                message=user_turn.content,
                now=now,
                settings=self.rt.settings,
                session_id=user_turn.session_id if stored else None,
                before_turn_id=user_turn.id if stored else None,
                budget=budget,
                assistant=self.rt.assistant_name,
                tolerant=True,
            )
        except (sqlite3.DatabaseError, EngineError) as exc:
            ctx = Context(
                sections=[],
                message=user_turn.content,
                budget=self.rt.settings.budget_tokens if budget is None else budget,
                session_id=user_turn.session_id if stored else None,
                notes=[
                    f"memory unreadable ({' '.join(str(exc).split())[:160]}); answering "
                    "without it; 'rheo doctor' checks the store"
                ],
            )
        ctx.notes[:0] = self.repairs
        request = build_request(
            ctx,
            model=self.rt.model,
            max_tokens=self.rt.config.max_tokens,
            now=now,
            tools=[] if self.incognito else self.tools,  # tools could write memory
            extra_system=self.extra_system,
            assistant_prompt=self.rt.assistant_prompt(),
        )
        return ctx, request

    def turn(
        self,
        message: str,
        *,
        new_session: bool = False,
        on_text: Callable[[str], None] | None = None,
        on_context: Callable[[Context], None] | None = None,
        provider: Provider | None = None,
        session_id: int | None = None,
        question: ledger.Turn | None = None,
    ) -> TurnResult:
        """Run one turn: store ``message``, then `respond` to it. ``on_text`` receives reply
        text as it streams. ``session_id`` joins that session (the store's id) whatever the
        gap; ``question`` re-sends an already stored user turn (a retry) instead of storing
        ``message``.

        Raises TurnFailed (model error; an ``error`` turn was stored) or TurnInterrupted
        (Ctrl-C; the partial reply was stored as ``interrupted``). The person's turn is stored
        in both cases.
        """
        self.repairs = []
        if question is not None:
            user_turn = question
        elif self.incognito:
            user_turn = ledger.Turn(
                id=0,
                profile=self.rt.profile,
                session_id=0,
                role="user",
                content=message,
                ts=to_stored(self.rt.now()),
            )
        else:
            user_turn = self.store_message(
                message, new_session=new_session, session_id=session_id
            ).turn
        return self.respond(user_turn, on_text=on_text, on_context=on_context, provider=provider)

    def respond(
        self,
        user_turn: ledger.Turn,
        *,
        on_text: Callable[[str], None] | None = None,
        on_context: Callable[[Context], None] | None = None,
        provider: Provider | None = None,
    ) -> TurnResult:
        """Answer a person's turn that is already stored (a fresh one, or one whose reply
        failed or never came: a retry, a front end catching up after a crash). Raises like
        `turn`. In `incognito` mode ``user_turn`` is not stored (id 0) and neither is the reply.
        """
        ctx, request = self.compose(user_turn)
        if on_context is not None:
            on_context(ctx)
        backend = provider or self.rt.provider()
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
            if self.after_reply is not None and not self.incognito:
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
        if self.after_reply is not None and not self.incognito:
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
            # The ledger cannot be changed later: no credential (a key, a password in a base
            # URL, a token in a query string) may enter it with an error message.
            meta["error"] = {k: redact(v) for k, v in error.items()}
        if usage.cost_usd is not None:  # reported by Claude Code
            meta["cost_usd"] = round(usage.cost_usd, 6)
        meta["reply_to"] = user_turn.id
        crash.reach("reply.record")
        if self.rt.assistant_name is not None:
            meta["assistant"] = self.rt.assistant_name
        turn_usage = ledger.Usage(**usage.counts())
        if self.incognito:
            return ledger.Turn(
                id=0,
                profile=self.rt.profile,
                session_id=0,
                role="assistant",
                content=content,
                ts=to_stored(self.rt.now()),
                model=model,
                status=status,
                usage=turn_usage,
                meta=meta,
            )
        # The reply is in hand: `db.write` waits for another process's lock rather than lose it.
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
            usage=turn_usage,
            meta=meta,
        ).turn


def preview(
    rt: Runtime,
    message: str,
    *,
    budget: int | None = None,
    tools: list[Any] | None = None,
    new_session: bool = False,
) -> dict[str, Any]:
    """The context and request ``message`` would get, built by the very code a turn uses: the
    message is stored tentatively (session detection included), `Assistant.compose` runs, and
    the write is rolled back, so nothing is kept and the preview is the request byte for byte.

    Returns ``{"system": [...], "messages": [...], "sections": [{name, text, tokens, lines}],
    "context_tokens", "message_tokens", "budget", "session_id" (None when the message would
    open a new session), "new_session", "model", "tools", "notes"}``.
    """
    assistant = Assistant(rt, tools=tools)
    with tentative(rt.conn):
        appended = assistant.store_message(message, new_session=new_session)
        ctx, request = assistant.compose(appended.turn, budget=budget)
    return {
        "model": rt.model,
        "assistant": rt.assistant_name,
        "session_id": None if appended.opened_session else ctx.session_id,
        "new_session": appended.opened_session,
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
