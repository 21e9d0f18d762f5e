"""What each memory tool does, for every caller (`caller.Caller`: the chat's model or an MCP
client): plain functions over a App, no SDK, and `call`, the one way in — the arguments
checked against the tool's schema (`specs`), the tool run, its result or its one-line
refusal returned as a `ToolOutput`.

Ownership: the profile is the runtime's (the chat's, or the one ``rheo mcp`` started for); no
tool takes one, and an id of another profile's item is "not found". The assistant is the
chat turn's (MCP clients: none, the shared memory). Every memory write needs a source turn.
In chat it is the person's turn being answered (source ``tool``; "always remember …" in the
person's own words there pins the fact; at most `MAX_WRITES_PER_TURN` facts per turn). Over
MCP, `write_memory` first records a *note turn*: ``[CLIENT via MCP] remember: LABEL``, meta
``{"source": "mcp", "client": CLIENT, "tool": "write_memory", "kind": "note"}``. It is an
``assistant`` turn (status ``ok``, model: the client's name), because the client's model made
the write, not the person: later contexts show it as ``assistant: [CLIENT via MCP] remember:
…``, never as the person speaking, and ``rheo ask --retry`` never takes it for an unanswered
question. The item then has source ``mcp``, that turn as its source, and the client's name in
its reason; the note and the item commit together, and a fact the engine refuses (bad
category, empty label, bad date) stores neither.

Output is the same for every caller: facts as ``#ID (CATEGORY, topic TOPIC, STATUS[, pinned],
confidence X.XX, since DATE[, due DATE]) LABEL (key: value)``, turns as ``#ID [DATE TIME]
ROLE: TEXT`` (at most `TURN_CHARS` characters), in the person's local time.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ...errors import RheoError
from ...memory import due as due_rule
from ...memory import jobs
from ...memory.context import withheld
from ...memory.context.assemble import SEPARATOR
from ...memory.facts import curation
from ...memory.facts import items as item_store
from ...memory.facts.pins import own_words, pin_requested
from ...memory.facts.reinforce import writes_from_turn
from ...memory.facts.remember import Fact, check_fact, remember
from ...memory.facts.scope import ASSISTANT
from ...memory.ledger import sources
from ...memory.ledger import turns as ledger
from ...memory.ledger.sessions import get_session
from ...memory.store.db import write
from ...memory.store.errors import EngineError, InvalidInput, NotFound
from ...memory.store.timeutil import display
from ...memory.text.render import entry
from ...memory.text.safety import clean
from ...turn.converse import ToolOutput
from ..app import App
from .caller import Caller
from .specs import CONTENT_MAX, TOOLS, ToolInputError, offered

__all__ = ["ToolInputError", "ToolOutput", "call"]

ACTIVE_OR_PAST = ("active", "superseded", "evicted", "done")
"""What a search may show: never what the person retracted."""


MAX_WRITES_PER_TURN = 5
"""At most this many facts one chat turn's tool calls may write (a runaway loop evicts
nothing)."""
TURN_CHARS = 1000
"""A turn in a tool's result is cut after this many characters."""
OWNED = frozenset(
    ("profile", "owner", "user", "source_turn_id", "status", "pinned", "created_at")
    + ("assistant", "agent", "source")
)
"""Arguments a model may try to set that rheo decides itself (named as such when ignored)."""


def _after_store(rt: App, appended: ledger.Appended) -> None:
    """A turn that opened a session closes the previous one: queue its digest, as a chat
    turn would (imported history excepted)."""
    closed = appended.closed_session
    if closed is not None and not sources.imported_session(rt.conn, rt.profile, closed.id):
        jobs.enqueue(
            rt.conn, profile=rt.profile, kind="digest", ref_id=closed.id, ts=appended.turn.ts
        )


def _due(rt: App, due: str | None) -> str | None:
    """``due`` as stored UTC text by the one due-date rule (`memory.due`); None when blank.
    Raises ToolInputError naming it when it is no date."""
    if due is None or not due.strip():
        return None
    try:
        return due_rule.stored(due, rt.now())
    except InvalidInput as exc:
        raise ToolInputError(f"due {exc}") from None


def write_memory(
    rt: App,
    caller: Caller,
    *,
    category: str,
    topic: str,
    label: str,
    properties: dict[str, Any] | None,
    confidence: float | None,
    reason: str | None,
    due: str | None,
    scope: str | None = None,
) -> str:
    """Store a fact through the memory write path (create, reinforce or supersede), citing
    the chat's turn or, over MCP, a note turn (see the module docstring); ``scope``
    ``assistant`` (offered only in an assistant's chat) files it under the turn's assistant.
    Returns what happened, e.g. ``stored memory #12``. Raises InvalidInput/ToolInputError
    (a bad date, the per-turn limit) with nothing stored."""
    turn = caller.turn
    if turn is not None and writes_from_turn(rt.conn, turn.id) >= MAX_WRITES_PER_TURN:
        raise ToolInputError(f"not stored: at most {MAX_WRITES_PER_TURN} memories per message")
    why = " ".join((reason or "").split())
    if caller.front == "mcp":
        why = f"{why} [via {caller.client}]" if why else f"[via {caller.client}]"
    fact = check_fact(
        Fact(
            category=category,
            topic=topic,
            label=label,
            properties=dict(properties or {}),
            confidence=confidence,
            reason=why,
            due_at=_due(rt, due),
        )
    )
    now = rt.now()
    if turn is not None:
        # "always remember ..." in the person's own words pins what the model stores.
        fact = replace(fact, pinned=pin_requested(own_words(turn.content), fact))
        return remember(
            rt.conn,
            fact,
            source="tool",
            now=now,
            settings=rt.settings,
            source_turn_id=turn.id,
            assistant=caller.assistant if scope == ASSISTANT else None,
        ).describe()
    with write(rt.conn):
        appended = ledger.append_turn(
            rt.conn,
            profile=rt.profile,
            role="assistant",
            content=f"[{caller.client} via MCP] remember: {fact.label}",
            now=now,
            gap_s=rt.settings.gap_s,
            model=caller.client[:100],
            status="ok",
            meta={
                "source": "mcp",
                "client": caller.client,
                "tool": "write_memory",
                "kind": "note",
            },
        )
        outcome = remember(
            rt.conn,
            fact,
            source="mcp",
            now=now,
            settings=rt.settings,
            source_turn_id=appended.turn.id,
        )
        _after_store(rt, appended)
    return outcome.describe()


def _item_lines(rt: App, found: list[item_store.MemoryItem]) -> str:
    now = rt.now()
    zone = now.tzinfo
    return "\n".join(
        entry(
            f"#{i.id} ({i.category}, topic {i.topic}, {i.state(now)}"
            f"{', pinned' if i.pinned else ''}, confidence {i.effective(now, rt.settings):.2f}, "
            f"since {display(i.created_at, zone, with_time=False)}"
            f"{', due ' + display(i.due_at, zone, with_time=False) if i.due_at else ''}) ",
            i.content_text(),
        )
        for i in found
    )


def memory_search(
    rt: App, caller: Caller, *, query: str, include_inactive: bool, limit: int
) -> str:
    """Stored facts the caller sees matching ``query`` (FTS5 over topic and content), best
    first, at most ``limit``; ``include_inactive``: replaced, evicted and done ones too."""
    statuses = ACTIVE_OR_PAST if include_inactive else ("active",)
    found = item_store.search_items(
        rt.conn, rt.profile, query, statuses=statuses, limit=limit, assistant=caller.assistant
    )
    return _item_lines(rt, [i for i, _ in found]) if found else "no stored facts match"


def memory_list(
    rt: App, caller: Caller, *, category: str | None, include_inactive: bool, limit: int
) -> str:
    """Active facts the caller sees, most confident first (``include_inactive``: every state
    but retracted, newest first), at most ``limit``."""
    now = rt.now()
    statuses = ACTIVE_OR_PAST if include_inactive else ("active",)
    found = item_store.list_items(
        rt.conn, rt.profile, statuses=statuses, category=category, assistant=caller.assistant
    )
    if not include_inactive:
        found = [i for i in found if not i.expired(now)]  # past its window: not current
        found.sort(key=lambda i: (-i.effective(now, rt.settings), -i.id))
    return _item_lines(rt, found[:limit]) if found else "no stored facts"


def memory_forget(rt: App, caller: Caller, *, id: int) -> str:
    """Retract item ``id`` (kept in history, never used or learnt again). Raises NotFound
    for an id this profile does not have, InvalidInput when already retracted. Offered to
    MCP clients only (see `specs`)."""
    item = curation.forget(
        rt.conn, rt.profile, id, rt.now(), cause=f"retracted over MCP by {caller.client}"
    )
    return f"forgotten #{item.id} (history kept): {item.content_text()}"


def _turn_lines(rt: App, turns: list[ledger.Turn]) -> str:
    zone = rt.now().tzinfo  # the person's local time, as everywhere
    return "\n".join(
        entry(f"#{t.id} [{display(t.ts, zone)}] {t.role}: ", t.content[:TURN_CHARS]) for t in turns
    )


def chat_search(rt: App, caller: Caller, *, query: str, limit: int) -> str:
    """Earlier turns matching ``query`` by keywords (FTS5, bm25), best first, at most
    ``limit``; never the chat turn being answered (it is in front of the model already), nor
    a turn the person asked rheo to forget (`memory.context.withheld`)."""
    here = caller.turn.id if caller.turn is not None else None
    held = withheld.load(rt.conn, rt.profile)
    found = ledger.search_turns(rt.conn, rt.profile, query, limit=limit + 20, any_term=True)
    turns = [t for t, _ in found if t.id != here and held.keeps(t)][:limit]
    return _turn_lines(rt, turns) if turns else "no earlier turns match"


def chat_recent(rt: App, caller: Caller, *, limit: int) -> str:
    """The profile's last ``limit`` turns, oldest first, but those the person asked rheo to
    forget."""
    held = withheld.load(rt.conn, rt.profile)
    found = [t for t in ledger.recent_turns(rt.conn, rt.profile, limit + 20) if held.keeps(t)]
    found = found[-limit:]
    return _turn_lines(rt, found) if found else "no turns yet"


def context(rt: App, caller: Caller, *, message: str, budget: int | None) -> str:
    """What rheo would inject for ``message`` (the same assembly as ``rheo context``): the
    clock line and the memory sections, without the message itself. Nothing is stored."""
    from ...turn.preview import preview

    if not message.strip():
        raise ToolInputError("message must not be empty")
    # A client's message is not stored by rheo, so its "remember that ..." is not honoured.
    info = preview(rt, message, budget=budget, honour=False)
    clock = info["system"][-1]["text"]
    text = "".join(
        part["text"] for msg in info["messages"] for part in msg["content"] if "text" in part
    )
    tail = f"{SEPARATOR}\n{message}"
    if text.endswith(tail):
        text = text[: -len(tail)]
    text = text.strip()
    return f"{clock}\n\n{text}" if text else f"{clock}\n\n(rheo has nothing stored for this)"


def _question(rt: App, turn_id: int) -> ledger.Turn:
    """The person's message ``turn_id`` that a reply names (``reply_to``). Raises
    ToolInputError when this profile has no such turn, or it is not a message of the
    person's (a reply, or a note rheo wrote for a memory)."""
    try:
        turn = ledger.get_turn(rt.conn, rt.profile, turn_id)
    except NotFound:
        raise ToolInputError(
            f"reply_to names turn #{turn_id}, which this profile does not have"
        ) from None
    if turn.meta.get("tool"):
        raise ToolInputError(
            f"reply_to names turn #{turn_id}, a note rheo wrote for a memory, not a message"
        )
    if turn.role != "user":
        raise ToolInputError(
            f"reply_to names turn #{turn_id}, a reply: name the person's message it answers"
        )
    return turn


def _same_reply(rt: App, question: ledger.Turn | None, content: str) -> ledger.Turn | None:
    """The reply to ``question`` already stored with exactly ``content``, or None."""
    if question is None:
        return None
    for turn in ledger.replies_with_content(rt.conn, rt.profile, question, content):
        if turn.meta.get("reply_to") == question.id:
            return turn
    return None


def log_turn(
    rt: App,
    caller: Caller,
    *,
    role: str,
    content: str,
    model: str | None,
    reply_to: int | None,
) -> str:
    """Record one turn of the client's conversation in the ledger (``rheo mcp --log-turns``):
    the person's message (role ``user``) or the reply (``assistant``).

    A message follows the gap rule for its session. A reply answers ``reply_to`` (the id the
    message's log_turn returned) when given, else this conversation's last message still
    awaiting one (see `ClientConversation`); it joins that message's session, records
    ``meta.reply_to`` and queues fact extraction of the pair, as a chat reply does. A reply
    with nothing to answer is stored unpaired, and nothing is extracted from it. Both
    carry the conversation's id in ``meta.conversation``.

    Returns the stored turn's id and session. Raises ToolInputError (nothing stored) for a
    bad role or content, a ``reply_to`` on a message, or a ``reply_to`` that is not a
    message of this profile's person, or when the caller has no conversation to log (only
    ``rheo mcp --log-turns`` offers the tool)."""
    conversation = caller.conversation
    if conversation is None:
        raise ToolInputError("log_turn is offered only by rheo mcp --log-turns")
    if role not in ledger.ROLES:
        raise ToolInputError(f"role must be user or assistant, not {role!r}")
    if not content.strip():
        raise ToolInputError("content must not be empty")
    if len(content) > CONTENT_MAX:
        raise ToolInputError(f"content is longer than {CONTENT_MAX} characters")
    if reply_to is not None and role != "assistant":
        raise ToolInputError("reply_to is for a reply (role assistant), not for a message")
    meta: dict[str, Any] = {
        "source": "mcp",
        "client": caller.client,
        "conversation": conversation.id,
    }
    with write(rt.conn):
        question: ledger.Turn | None = None
        if reply_to is not None:
            question = _question(rt, reply_to)
        elif role == "assistant" and conversation.waiting is not None:
            with contextlib.suppress(NotFound):  # purged meanwhile: the reply is unpaired
                question = ledger.get_turn(rt.conn, rt.profile, conversation.waiting)
        if question is not None:
            meta["reply_to"] = question.id  # extraction pairs the reply with it
        stored_before = _same_reply(rt, question, content) if reply_to is not None else None
        if stored_before is not None:  # a host logging again a reply it got no answer for
            if question is not None and question.id == conversation.waiting:
                conversation.waiting = None
            number = get_session(rt.conn, rt.profile, stored_before.session_id).number
            return (
                f"already stored as turn #{stored_before.id} in session s{number}, the reply "
                f"to #{reply_to}; not stored again"
            )
        appended = ledger.append_turn(
            rt.conn,
            profile=rt.profile,
            role=role,
            content=content,
            now=rt.now(),
            gap_s=rt.settings.gap_s,
            session_id=question.session_id if question is not None else None,
            model=(model or caller.client)[:100] if role == "assistant" else None,
            status="ok" if role == "assistant" else None,
            meta=meta,
        )
        turn = appended.turn
        _after_store(rt, appended)
        queued = question is not None and jobs.enqueue(
            rt.conn, profile=rt.profile, kind="extract", ref_id=turn.id, ts=turn.ts
        )
    if role == "user":
        conversation.waiting = turn.id
    elif question is not None and question.id == conversation.waiting:
        conversation.waiting = None
    if queued:
        from ...background.worker import kick_background

        kick_background(rt)
    number = get_session(rt.conn, rt.profile, turn.session_id).number
    stored = f"stored turn #{turn.id} in session s{number}"
    if role == "user":
        return f"{stored}; log the reply with reply_to {turn.id}"
    if question is None:
        return f"{stored}, not paired: no message of this conversation awaits a reply"
    from ...background.worker import worker_mode

    later = worker_mode() == "off"  # left for `rheo maintain`
    return f"{stored}, the reply to #{question.id}" + (
        ("; facts will be extracted from this exchange" + (" by 'rheo maintain'" if later else ""))
        if queued
        else ""
    )


_RUNNERS: dict[str, Callable[..., str]] = {
    "write_memory": write_memory,
    "memory_search": memory_search,
    "memory_list": memory_list,
    "memory_forget": memory_forget,
    "chat_search": chat_search,
    "chat_recent": chat_recent,
    "context": context,
    "log_turn": log_turn,
}
"""What runs each tool of `specs.TOOLS`: ``(rt, caller, **arguments) -> text``."""


def call(rt: App, caller: Caller, name: str, arguments: Any) -> ToolOutput:
    """Run tool ``name`` with ``arguments`` (the call's JSON object) for ``caller``.

    A tool its front end does not offer is an unknown tool. The arguments are checked
    against the tool's schema (`specs.Tool.check`) and their text made safe to store (lone
    surrogates and control characters replaced); arguments the schema does not name are
    ignored and the result ends saying so. Never raises (but KeyboardInterrupt): a refusal
    (`ToolInputError`, an engine error, a rheo error) is ``ToolOutput(line, is_error=True)``
    with nothing stored, and so is a failure nobody expected (``error: TYPE: message``,
    with the exception in ``crash`` for the front end to log).
    """
    tool = TOOLS.get(name)
    log_turns = caller.conversation is not None
    if tool is None or tool not in offered(caller.front, log_turns=log_turns):
        return ToolOutput(f"unknown tool {' '.join(str(name).split())[:100]!r}", is_error=True)
    try:
        values, ignored = tool.check(arguments, caller.assistant)
        text = _RUNNERS[name](rt, caller, **{k: _clean(v) for k, v in values.items()})
    except (ToolInputError, EngineError, RheoError) as exc:
        return ToolOutput(_one_line(str(exc)) or type(exc).__name__, is_error=True)
    except Exception as exc:  # noqa: BLE001 - memory never breaks the chat or the server
        detail = _one_line(str(exc))[:200]
        return ToolOutput(f"error: {type(exc).__name__}: {detail}", is_error=True, crash=exc)
    note = _ignored(name, ignored)
    if note:
        text += f" ({note})" if "\n" not in text else f"\n({note})"
    return ToolOutput(text)


def _ignored(name: str, ignored: list[str]) -> str:
    """What the result says of arguments ``name``'s schema does not have ("" for none)."""
    owned = [_one_line(k)[:40] for k in ignored if k in OWNED]
    other = [_one_line(k)[:40] for k in ignored if k not in OWNED]
    parts = []
    if owned:
        parts.append(f"ignored {', '.join(owned)}: rheo decides {_these(owned)}")
    if other:
        what = "an argument" if len(other) == 1 else "arguments"
        parts.append(f"ignored {', '.join(other[:5])}: not {what} of {name}")
    return "; ".join(parts)


def _these(names: list[str]) -> str:
    return "this" if len(names) == 1 else "these"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _clean(value: Any) -> Any:
    """``value`` with its text (keys and strings, nested too) safe to store and show."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(str(k)): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value
