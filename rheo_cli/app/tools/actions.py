"""What the MCP tools do, for one profile and one client; plain functions over a Runtime.

Ownership: the profile is the server's, fixed when ``rheo mcp`` starts; no tool takes one,
and an id of another profile's item is "not found". A memory written over MCP needs a source
turn like every other write, so `write_memory` first records a *note turn*:
``[CLIENT via MCP] remember: LABEL``, meta ``{"source": "mcp", "client": CLIENT, "tool":
"write_memory", "kind": "note"}``. It is an ``assistant`` turn (status ``ok``, model: the
client's name), because the client's model made the write, not the person: later contexts
show it as ``assistant: [CLIENT via MCP] remember: …``, never as the person speaking, and
``rheo ask --retry`` never takes it for an unanswered question. The item then has source
``mcp``, that turn as its source, and the client's name in its reason; the note and the item
commit together, and a fact the engine refuses (bad category, empty label, bad date) stores
neither.

Errors the caller can fix raise `engine errors <EngineError>` or `ToolInputError`; the
server turns them into tool errors.
"""

from __future__ import annotations

import contextlib
import secrets
from typing import Any

from ...memory import due as due_rule
from ...memory import jobs
from ...memory.context.assemble import SEPARATOR
from ...memory.facts import curation
from ...memory.facts import items as item_store
from ...memory.facts.remember import Fact, check_fact, remember
from ...memory.ledger import sources
from ...memory.ledger import turns as ledger
from ...memory.store.db import write
from ...memory.store.errors import InvalidInput, NotFound
from ...memory.store.timeutil import display
from ...memory.text.render import entry
from ...runtime import Runtime
from .caller import CONTENT_MAX, Caller

ACTIVE_OR_PAST = ("active", "superseded", "evicted", "done")
"""What a search may show: never what the person retracted."""


class ToolInputError(Exception):
    """Arguments a tool cannot use (beyond what its schema checks)."""


def _after_store(rt: Runtime, appended: ledger.Appended) -> None:
    """A turn that opened a session closes the previous one: queue its digest, as a chat
    turn would (imported history excepted)."""
    closed = appended.closed_session
    if closed is not None and not sources.imported_session(rt.conn, rt.profile, closed.id):
        jobs.enqueue(
            rt.conn, profile=rt.profile, kind="digest", ref_id=closed.id, ts=appended.turn.ts
        )


def _due(rt: Runtime, due: str | None) -> str | None:
    """``due`` as stored UTC text by the one due-date rule (`memory.due`); None when blank.
    Raises ToolInputError naming it when it is no date."""
    if due is None or not due.strip():
        return None
    try:
        return due_rule.stored(due, rt.now())
    except InvalidInput as exc:
        raise ToolInputError(f"due {exc}") from None


def write_memory(
    rt: Runtime,
    caller: Caller,
    *,
    category: str,
    topic: str,
    label: str,
    properties: dict[str, Any] | None = None,
    confidence: float | None = None,
    reason: str = "",
    due: str | None = None,
) -> str:
    """Store a fact through the memory write path (create, reinforce or supersede) with a
    note turn as its source (see the module docstring). Returns what happened, e.g.
    ``stored memory #12``. Raises InvalidInput/ToolInputError with nothing stored."""
    why = " ".join(reason.split())
    fact = check_fact(
        Fact(
            category=category,
            topic=topic,
            label=label,
            properties=dict(properties or {}),
            confidence=confidence,
            reason=f"{why} [via {caller.client}]" if why else f"[via {caller.client}]",
            due_at=_due(rt, due),
        )
    )
    now = rt.now()
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


def _item_lines(rt: Runtime, found: list[item_store.MemoryItem]) -> str:
    now = rt.now()
    zone = now.tzinfo
    return "\n".join(
        entry(
            f"#{i.id} ({i.category}, topic {i.topic}, {i.status}"
            f"{', pinned' if i.pinned else ''}, confidence {i.effective(now, rt.settings):.2f}, "
            f"since {display(i.created_at, zone, with_time=False)}"
            f"{', due ' + display(i.due_at, zone, with_time=False) if i.due_at else ''}) ",
            i.content_text(),
        )
        for i in found
    )


def memory_search(
    rt: Runtime, *, query: str, include_inactive: bool = False, limit: int = 10
) -> str:
    """Stored facts matching ``query`` (FTS5 over topic and content), best first."""
    statuses = ACTIVE_OR_PAST if include_inactive else ("active",)
    found = item_store.search_items(rt.conn, rt.profile, query, statuses=statuses, limit=limit)
    return _item_lines(rt, [i for i, _ in found]) if found else "no stored facts match"


def memory_list(
    rt: Runtime, *, category: str | None = None, include_inactive: bool = False, limit: int = 50
) -> str:
    """Active facts, most confident first (``include_inactive``: every state but retracted,
    newest first), at most ``limit``."""
    now = rt.now()
    statuses = ACTIVE_OR_PAST if include_inactive else ("active",)
    found = item_store.list_items(rt.conn, rt.profile, statuses=statuses, category=category)
    if not include_inactive:
        found.sort(key=lambda i: (-i.effective(now, rt.settings), -i.id))
    return _item_lines(rt, found[:limit]) if found else "no stored facts"


def memory_forget(rt: Runtime, caller: Caller, *, item_id: int) -> str:
    """Retract item ``item_id`` (kept in history, never used or learnt again). Raises
    NotFound for an id this profile does not have, InvalidInput when already retracted."""
    item = curation.forget(
        rt.conn, rt.profile, item_id, rt.now(), cause=f"retracted over MCP by {caller.client}"
    )
    return f"forgotten #{item.id} (history kept): {item.content_text()}"


def _turn_lines(rt: Runtime, turns: list[ledger.Turn]) -> str:
    zone = rt.now().tzinfo  # the person's local time, as everywhere
    return "\n".join(
        entry(f"#{t.id} [{display(t.ts, zone)}] {t.role}: ", t.content[:1000]) for t in turns
    )


def chat_search(rt: Runtime, *, query: str, limit: int = 8) -> str:
    """Earlier turns matching ``query`` by keywords (FTS5, bm25), best first."""
    found = ledger.search_turns(rt.conn, rt.profile, query, limit=limit, any_term=True)
    return _turn_lines(rt, [t for t, _ in found]) if found else "no earlier turns match"


def chat_recent(rt: Runtime, *, limit: int = 20) -> str:
    """The profile's last ``limit`` turns, oldest first."""
    found = ledger.recent_turns(rt.conn, rt.profile, limit)
    return _turn_lines(rt, found) if found else "no turns yet"


def context(rt: Runtime, *, message: str, budget: int | None = None) -> str:
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


class Conversation:
    """One client connection's conversation (``rheo mcp --log-turns``): an identity of its
    own and the message it logged last that still awaits a reply.

    Each ``rheo mcp`` process serves one client over stdio, so each process (each
    connection) is one conversation. A reply is paired with *this* conversation's waiting
    message, never with whatever turn the profile stored last: two clients logging at once
    (two Claude Code windows on one profile) each keep their own pairs.
    """

    def __init__(self) -> None:
        self.id = secrets.token_hex(6)
        self.waiting: int | None = None
        """The id of the last message (role user) this conversation logged without a reply."""


def _question(rt: Runtime, turn_id: int) -> ledger.Turn:
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


def log_turn(
    rt: Runtime,
    caller: Caller,
    conversation: Conversation,
    *,
    role: str,
    content: str,
    model: str | None = None,
    reply_to: int | None = None,
) -> str:
    """Record one turn of the client's conversation in the ledger (``rheo mcp --log-turns``):
    the person's message (role ``user``) or the reply (``assistant``).

    A message follows the gap rule for its session. A reply answers ``reply_to`` (the id the
    message's log_turn returned) when given, else this conversation's last message still
    awaiting one (see `Conversation`); it joins that message's session, records
    ``meta.reply_to`` and queues fact extraction of the pair, as a chat reply does. A reply
    with nothing to answer is stored unpaired, and nothing is extracted from it. Both
    carry the conversation's id in ``meta.conversation``.

    Returns the stored turn's id and session. Raises ToolInputError (nothing stored) for a
    bad role or content, a ``reply_to`` on a message, or a ``reply_to`` that is not a
    message of this profile's person."""
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
    from ...memory.ledger.sessions import get_session

    number = get_session(rt.conn, rt.profile, turn.session_id).number
    stored = f"stored turn #{turn.id} in session s{number}"
    if role == "user":
        return f"{stored}; log the reply with reply_to {turn.id}"
    if question is None:
        return f"{stored}, not paired: no message of this conversation awaits a reply"
    return f"{stored}, the reply to #{question.id}" + (
        "; facts will be extracted from this exchange" if queued else ""
    )
