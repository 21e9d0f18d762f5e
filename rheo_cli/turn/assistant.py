"""One turn of conversation: store the message, assemble the context, converse with the
model, record the reply.

The order is the promise of "nothing lost": the person's turn is committed before the model
is called; the reply is committed with its status whatever happens (``ok``, ``interrupted``
with the partial text on Ctrl-C or when the reply was cut at the max_tokens limit, ``error``
with what arrived before a failure).

Memory never breaks the chat: when the ledger cannot be written (a read-only file, a full
disk) the reply still comes, made with what can be read, and `Assistant.not_stored` says
what was not stored and why; when the store cannot even be opened, the reply is made without
memory. Only a lock held past the busy timeout (try again) and a store from a newer rheo
(upgrade) still stop the turn before the model is called.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from ..memory.context.assemble import Context
from ..memory.ledger import turns as ledger
from ..memory.store.errors import Busy, DatabaseError, NewerStore, StoreError
from ..memory.store.timeutil import to_stored
from ..providers.base import ChatRequest, Provider, ProviderError, ToolCall
from ..services import Services
from . import assemble, store
from .converse import Reply, ToolOutput, converse
from .record import record_reply
from .results import NotStored, TurnFailed, TurnInterrupted, TurnResult

ToolRunner = Callable[[ToolCall, ledger.Turn], ToolOutput]
"""Runs one tool call the model made while answering the person's stored turn."""


class Assistant:
    """Runs turns for one runtime. ``tools``/``run_tool`` plug in the memory tools."""

    def __init__(
        self,
        rt: Services,
        *,
        tools: list[Any] | None = None,
        run_tool: ToolRunner | None = None,
        after_reply: Callable[[ledger.Turn, ledger.Turn], None] | None = None,
        # after_reply runs for complete and interrupted replies (not failed ones).
        on_session_closed: Callable[[int], None] | None = None,
        # The stored person's turn; returns what explicit memory requests in it did.
        on_message: Callable[[ledger.Turn], list[str] | None] | None = None,
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
        self.requests: list[str] = []
        """What rheo did for the explicit memory requests of the last turn ("remember that",
        "forget that": `memory.facts.requests.honour`), one line each: shown to the person
        and told to the model."""
        self.not_stored: NotStored | None = None
        """Why the last turn, or its reply, was not stored although it should have been (the
        ledger could not be written, the store not opened); None when all was stored (or
        nothing was meant to be: incognito). Front ends tell the person in one line."""

    def store_message(
        self,
        message: str,
        *,
        new_session: bool = False,
        session_id: int | None = None,
        meta: dict[str, Any] | None = None,
    ) -> ledger.Appended:
        """Commit the person's turn (see `store.store_message`; a repaired search index is
        noted in `repairs`), then tell ``on_session_closed`` of a session the gap closed and
        ``on_message`` of the stored turn. Raises StoreError when the ledger cannot be
        written."""
        appended = store.store_message(
            self.rt,
            message,
            new_session=new_session,
            session_id=session_id,
            meta=meta,
            repairs=self.repairs,
        )
        if appended.closed_session is not None and self.on_session_closed is not None:
            # The turn is stored; a digest job not queued now is queued the next time the
            # next turn or worker pass finds it (`App.queue_closed_sessions`).
            with contextlib.suppress(StoreError):
                self.on_session_closed(appended.closed_session.id)
        if self.on_message is not None:
            self.requests = list(self.on_message(appended.turn) or [])
        return appended

    def compose(
        self, user_turn: ledger.Turn, *, budget: int | None = None
    ) -> tuple[Context, ChatRequest]:
        """The context and the model request for a stored user turn (`assemble.compose`,
        also behind `preview.preview`, so ``rheo context`` shows what ``rheo ask`` sends).
        ``budget`` (tokens) overrides the configured one."""
        return assemble.compose(
            self.rt,
            user_turn,
            budget=budget,
            stored=not self.incognito,
            # Tools could write memory: none for a turn that is not stored.
            tools=[] if self.incognito or not user_turn.id else self.tools,
            extra_system=self.extra_system,
            notes=self.repairs,
            memory=not (self.not_stored is not None and self.not_stored.unopened),
            requests=self.requests,
        )

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
        meta: dict[str, Any] | None = None,
    ) -> TurnResult:
        """Run one turn: store ``message`` (with ``meta``), then `respond` to it. ``on_text``
        receives reply text as it streams. ``session_id`` joins that session (the store's
        id) whatever the gap; ``question`` re-sends an already stored user turn (a retry)
        instead of storing ``message``.

        Raises TurnFailed (model error; an ``error`` turn was stored) or TurnInterrupted
        (Ctrl-C; the partial reply was stored as ``interrupted``). The person's turn is stored
        in both cases — unless the ledger cannot be written: then the turn goes on unstored
        and `not_stored` says why. Raises Busy when the store stayed busy past the bounded
        wait (either store), NewerStore for a store from a newer rheo, and the
        engine's NotFound for a ``session_id`` that is not the profile's.
        """
        self.repairs = []
        self.requests = []
        self.not_stored = None
        if question is not None:
            user_turn = question
        elif self.incognito:
            user_turn = self._unstored_turn(message)
        else:
            try:
                user_turn = self.store_message(
                    message, new_session=new_session, session_id=session_id, meta=meta
                ).turn
            except StoreError as exc:
                if isinstance(exc, NewerStore | Busy):
                    raise  # busy: trying again soon stores the turn, so it is reported
                    # rather than answered unstored
                # Memory never breaks the chat: answer with what can be read, store nothing.
                unopened = not isinstance(exc, DatabaseError)  # the store did not open
                self.not_stored = NotStored(exc, unopened=unopened)
                user_turn = self._unstored_turn(message)
        return self.respond(user_turn, on_text=on_text, on_context=on_context, provider=provider)

    def _unstored_turn(self, message: str) -> ledger.Turn:
        """The person's turn as it would be, not in the ledger (id 0, no session)."""
        return ledger.Turn(
            id=0,
            profile=self.rt.profile,
            session_id=0,
            role="user",
            content=message,
            ts=to_stored(self.rt.now()),
        )

    def respond(
        self,
        user_turn: ledger.Turn,
        *,
        on_text: Callable[[str], None] | None = None,
        on_context: Callable[[Context], None] | None = None,
        provider: Provider | None = None,
    ) -> TurnResult:
        """Answer a person's turn that is already stored (a fresh one, or one whose reply
        failed or never came: a retry, a front end catching up after a crash): assemble,
        converse, record. Raises like `turn`. In `incognito` mode, or when the ledger could
        not be written, ``user_turn`` is not stored (id 0) and neither is the reply. A reply
        that cannot be stored is still returned (or raised with), with `not_stored` set.
        """
        ctx, request = self.compose(user_turn)
        if on_context is not None:
            on_context(ctx)
        backend = provider or self.rt.provider()
        reply = Reply(model=self.rt.model)
        run_tool = self.run_tool
        try:
            converse(
                backend,
                request,
                reply,
                run_tool=None if run_tool is None else (lambda call: run_tool(call, user_turn)),
                on_text=on_text,
            )
        except KeyboardInterrupt as stop:
            turn = self._record(user_turn, reply, "interrupted")
            self._after(user_turn, turn)
            raise TurnInterrupted(turn, user_turn, stop) from None
        except ProviderError as exc:
            turn = self._record(user_turn, reply, "error", error=exc)
            raise TurnFailed(exc, turn, user_turn) from None
        text = reply.text.strip()
        if not text:
            error = ProviderError(
                "other",
                f"the reply was cut at the max_tokens limit ({request.max_tokens:,} tokens) "
                "before any text"
                if reply.cut
                else "the model answered with no text",
            )
            turn = self._record(user_turn, reply, "error", content="", error=error)
            raise TurnFailed(error, turn, user_turn)
        # A reply cut at the max_tokens limit is incomplete: kept as `interrupted`, with
        # meta stop_reason "max_tokens" saying why, and still delivered.
        assistant_turn = self._record(
            user_turn, reply, "interrupted" if reply.cut else "ok", content=text
        )
        self._after(user_turn, assistant_turn)
        return TurnResult(
            reply=text,
            user_turn=user_turn,
            assistant_turn=assistant_turn,
            usage=reply.usage,
            model=reply.model,
            context=ctx,
            tool_calls=reply.tool_calls,
            stop_reason=reply.stop_reason,
            max_tokens=request.max_tokens,
            provider=getattr(backend, "name", ""),
        )

    def _record(
        self,
        user_turn: ledger.Turn,
        reply: Reply,
        status: str,
        *,
        content: str | None = None,
        error: ProviderError | None = None,
    ) -> ledger.Turn:
        stored = not self.incognito and bool(user_turn.id)
        try:
            return record_reply(
                self.rt, user_turn, reply, status, content=content, error=error, stored=stored
            )
        except StoreError as exc:
            # The reply is in hand (`record_reply` waited for any lock): deliver it anyway.
            self.not_stored = NotStored(exc, reply_only=True)
            return record_reply(
                self.rt, user_turn, reply, status, content=content, error=error, stored=False
            )

    def _after(self, user_turn: ledger.Turn, reply: ledger.Turn) -> None:
        """Run ``after_reply`` (extraction) for a complete or interrupted reply that is
        stored (not incognito). A store that cannot take the job leaves the exchange
        unextracted: no memory is better than a failed chat."""
        if self.after_reply is not None and not self.incognito and reply.id:
            with contextlib.suppress(StoreError):
                self.after_reply(user_turn, reply)
