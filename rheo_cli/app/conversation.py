"""`Conversation`: the one way every front end runs a turn, and the `Outcome` it ends in.

``Conversation(app).send(text, options, on_event)`` stores the person's message, honours an
explicit memory request, assembles the context, streams the model's reply (each piece of
text, notice and tool call reaches ``on_event`` as it happens), records the reply, queues the
memory work that follows (extraction, the digest of a session the gap closed) and returns one
`Outcome`: ``ok``, ``cut`` (the reply reached the output limit), ``interrupted`` (Ctrl-C,
SIGTERM: the partial reply is kept) or ``failed`` (the model call failed: the question is
kept). Expected endings are outcomes, never exceptions; only what stops a turn before the
model is called raises (see `Conversation.send`).

The CLI, the REPL and the Telegram bot render events and outcomes; none of them sets
anything on the turn machinery before a turn or reads anything from it after.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import UsageError
from ..memory.ledger import sessions as sessions_mod
from ..memory.ledger import turns as ledger
from ..memory.store.errors import StoreError
from ..providers.base import ProviderError, Usage
from ..turn.results import NotStored, TurnFailed, TurnInterrupted, TurnResult, outcome_json
from .app import App

NOTHING_TO_RETRY = "nothing to retry: the last question was answered"


@dataclass(frozen=True)
class SendOptions:
    """How one message is sent.

    ``new_session``: start a new session whatever the gap; ``session``: join the session
    numbered ``s<session>`` (as `rheo sessions list` shows it); ``continue_last``: stay in the
    latest session even after a long pause; ``retry``: send the last unanswered question again
    (``text`` must be empty); ``question_id``: answer that stored question of the person's
    (a front end catching up after a crash); ``fork``: start a new session whose context
    begins with the turns of the session numbered ``s<fork>`` (its origin is kept on the new
    session's first turn, `ledger.FORK_OF`). At most one of these six. ``system``: extra
    instructions after rheo's own; ``incognito``: read memory, store and learn nothing;
    ``meta``: stored with the person's turn (a front end's own ids); ``background``: start
    the memory work (extraction, digests) when the turn ends."""

    new_session: bool = False
    session: int | None = None
    continue_last: bool = False
    retry: bool = False
    question_id: int | None = None
    fork: int | None = None
    system: str | None = None
    incognito: bool = False
    meta: dict[str, Any] | None = None
    background: bool = True


@dataclass(frozen=True)
class TextDelta:
    """A piece of the reply's text, as it streams."""

    text: str


@dataclass(frozen=True)
class Notice:
    """One line for the person about this turn (a repaired index, a provider retrying, what
    an explicit memory request did), said while the turn runs."""

    text: str


@dataclass(frozen=True)
class ToolActivity:
    """The model called one of rheo's memory tools: its ``name``, a short ``summary`` of what
    it did (the first line the tool answered, e.g. ``stored #12: Ana prefers tea``) and
    whether the call was refused or failed."""

    name: str
    summary: str
    failed: bool = False


Event = TextDelta | Notice | ToolActivity
EventSink = Callable[[Event], None]
Status = Literal["ok", "cut", "interrupted", "failed"]


@dataclass(frozen=True)
class Outcome:
    """How a turn ended.

    ``status``: ``ok``; ``cut`` (the reply stopped at the output limit, incomplete; stored as
    ``interrupted``); ``interrupted`` (Ctrl-C or a signal: ``cause`` is the
    KeyboardInterrupt, `ui.signals.Terminated` for SIGTERM/SIGHUP); ``failed`` (the model call
    failed: ``error``). ``reply`` is the text that arrived (partial unless ok).
    ``user_turn_id``/``reply_turn_id``: the stored turns (0 when not stored);
    ``session_id``/``session_number`` the session (None when nothing was stored);
    ``not_stored``: why a turn that should have been stored was not (memory never breaks the
    chat: the reply still came); ``usage`` summed over the turn's model calls (tokens);
    ``max_tokens`` the request's output limit; ``context_tokens`` what the injected context
    cost; ``provider`` and ``model`` the ones that answered."""

    status: Status
    reply: str
    user_turn_id: int
    reply_turn_id: int
    session_id: int | None
    session_number: int | None
    usage: Usage
    model: str
    provider: str = ""
    stop_reason: str | None = None
    max_tokens: int = 0
    context_tokens: int = 0
    tool_calls: tuple[dict[str, Any], ...] = ()
    error: ProviderError | None = None
    not_stored: NotStored | None = None
    incognito: bool = False
    cause: BaseException | None = field(default=None, repr=False)
    _json: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def cut(self) -> bool:
        """True when the reply stopped at the output limit."""
        return self.status == "cut"

    def to_json(self) -> dict[str, Any]:
        """``rheo ask --json``: reply, session_id, session_number, turn_ids, usage, model,
        status (the stored status: ok, interrupted, error), error, stop_reason and, for a
        reply that came, context_tokens."""
        return {**self._json, "session_number": self.session_number}


class Conversation:
    """Turns of one `App` (its profile, assistant and provider). Build one per front-end
    conversation and call `send` for each message."""

    def __init__(self, app: App) -> None:
        self.app = app

    def send(
        self, text: str, options: SendOptions | None = None, on_event: EventSink | None = None
    ) -> Outcome:
        """Run one turn for ``text`` and return its `Outcome`; ``on_event`` receives each
        `TextDelta`, `Notice` and `ToolActivity` as it happens (None: nothing streams).

        Raises, before the model is called: UsageError (contradicting options, ``retry``
        with text or with nothing to retry, an unknown session number or question id),
        NoProviderConfigured (no model configured: nothing is stored), ConfigError (an
        unreadable assistant prompt file), the engine's StoreError when the store stayed busy past
        its bounded wait (Busy) or is from a newer rheo (NewerStore); and, after the model
        answered, `turn.record.SessionPurged` when ``rheo purge`` erased the session
        meanwhile."""
        opts = options or SendOptions()
        emit = on_event or _ignore
        chosen = (opts.new_session, opts.session is not None, opts.continue_last, opts.retry)
        if sum(chosen) + (opts.question_id is not None) + (opts.fork is not None) > 1:
            raise UsageError("use only one of --continue, --session, --new, --fork and --retry")
        if opts.fork is not None and opts.incognito:
            raise UsageError("--fork starts a stored session: use it without --incognito")
        if opts.retry and text.strip():
            raise UsageError("--retry sends the stored question again: give no new one")
        app = self.app
        app.assistant_prompt()  # an unreadable prompt file: one line, nothing stored
        backend = app.provider()  # none configured: guidance, nothing stored
        backend.on_retry = lambda line: emit(Notice(line))
        question, session_id = self._target(opts)
        meta = self._fork_meta(opts)
        assistant = self._assistant(opts, emit)
        try:
            if not opts.incognito:
                # Sessions closed by time while nobody was here get their digest job now.
                app.queue_closed_sessions()
            result = assistant.turn(
                text,
                new_session=opts.new_session or opts.fork is not None,
                on_text=lambda piece: emit(TextDelta(piece)),
                on_context=lambda ctx: [emit(Notice(n)) for n in getattr(ctx, "notes", [])],
                session_id=session_id,
                question=question,
                meta=meta,
            )
        except TurnInterrupted as exc:
            return self._ended("interrupted", exc.user_turn, exc.turn, assistant, opts, cause=exc)
        except TurnFailed as exc:
            return self._ended("failed", exc.user_turn, exc.turn, assistant, opts, error=exc.error)
        finally:
            if opts.background and not opts.incognito:
                _kick(app)
        return self._done(result, assistant, opts)

    def unanswered_question(self) -> str | None:
        """The text of the profile's last question whose reply failed or never came (what
        ``retry`` sends again); None when the last question was answered."""
        question = ledger.unanswered_question(self.app.conn, self.app.profile)
        return question.content if question is not None else None

    def _target(self, opts: SendOptions) -> tuple[ledger.Turn | None, int | None]:
        """The stored question to answer again (retry, question_id) and the session to join
        (``--session N``, ``--continue``). Raises UsageError for what does not exist."""
        app = self.app
        if opts.retry:
            question = ledger.unanswered_question(app.conn, app.profile)
            if question is None:
                raise UsageError(NOTHING_TO_RETRY)
            return question, None
        if opts.question_id is not None:
            found = ledger.get_turns(app.conn, app.profile, [opts.question_id])
            if not found or found[0].role != "user":
                raise UsageError(f"no question #{opts.question_id} in profile {app.profile!r}")
            return found[0], None
        if opts.session is not None:
            from ..memory.store.errors import NotFound

            try:
                return None, sessions_mod.session_by_number(app.conn, app.profile, opts.session).id
            except NotFound as exc:
                raise UsageError(str(exc)) from None
        if opts.continue_last:
            try:
                latest = sessions_mod.latest_session(app.conn, app.profile)
            except StoreError:  # the turn answers without it, and says why
                latest = None
            return None, latest.id if latest is not None else None
        return None, None

    def _fork_meta(self, opts: SendOptions) -> dict[str, Any] | None:
        """``opts.meta`` with, for ``fork``, the id of the session forked from. Raises
        UsageError for a session number the profile does not have."""
        if opts.fork is None:
            return opts.meta
        from ..memory.store.errors import NotFound

        try:
            origin = sessions_mod.session_by_number(self.app.conn, self.app.profile, opts.fork)
        except NotFound as exc:
            raise UsageError(str(exc)) from None
        return {**(opts.meta or {}), ledger.FORK_OF: origin.id}

    def _assistant(self, opts: SendOptions, emit: EventSink) -> Any:
        from .tools.chat import make_assistant

        def on_tool(name: str, output: Any) -> None:
            first = (output.text.strip().splitlines() or [""])[0]
            emit(ToolActivity(name, first[:200], failed=bool(output.is_error)))

        assistant = make_assistant(self.app, on_tool=on_tool)
        assistant.extra_system = opts.system
        assistant.incognito = opts.incognito
        return assistant

    def _number(self, session_id: int) -> int | None:
        """The session's number as people see it (``s<N>``); None when it cannot be read."""
        if not session_id:
            return None
        try:
            return sessions_mod.session_numbers(self.app.conn, self.app.profile).get(session_id)
        except StoreError:
            return None

    def _done(self, result: TurnResult, assistant: Any, opts: SendOptions) -> Outcome:
        session_id = result.user_turn.session_id or None
        return Outcome(
            status="cut" if result.cut else "ok",
            reply=result.reply,
            user_turn_id=result.user_turn.id,
            reply_turn_id=result.assistant_turn.id,
            session_id=session_id,
            session_number=self._number(result.user_turn.session_id),
            usage=result.usage,
            model=result.model,
            provider=result.provider,
            stop_reason=result.stop_reason,
            max_tokens=result.max_tokens,
            context_tokens=result.context.context_tokens,
            tool_calls=tuple(result.tool_calls),
            not_stored=assistant.not_stored,
            incognito=opts.incognito,
            _json=result.to_json(),
        )

    def _ended(
        self,
        status: Status,
        user_turn: ledger.Turn,
        turn: ledger.Turn,
        assistant: Any,
        opts: SendOptions,
        *,
        error: ProviderError | None = None,
        cause: TurnInterrupted | None = None,
    ) -> Outcome:
        usage = turn.usage or ledger.Usage()
        return Outcome(
            status=status,
            reply=turn.content,
            user_turn_id=user_turn.id,
            reply_turn_id=turn.id,
            session_id=user_turn.session_id or None,
            session_number=self._number(user_turn.session_id),
            usage=Usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
            ),
            model=turn.model or self.app.model,
            stop_reason=turn.meta.get("stop_reason") if isinstance(turn.meta, dict) else None,
            error=error,
            not_stored=assistant.not_stored,
            incognito=opts.incognito,
            cause=cause.cause if cause is not None else None,
            _json=outcome_json(user_turn, turn, str(error) if error is not None else status),
        )


def _ignore(event: Event) -> None:
    """The event sink of a turn nobody watches."""


def _kick(app: App) -> None:
    """Start the background work the turn queued (never raises: memory must not disturb the
    chat)."""
    from ..background.worker import kick_background

    with contextlib.suppress(Exception):
        kick_background(app)
