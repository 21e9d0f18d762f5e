"""What the MCP tools do, for one profile and one client; plain functions over a Runtime.

Ownership: the profile is the server's, fixed when ``rheo mcp`` starts; no tool takes one,
and an id of another profile's item is "not found". A memory written over MCP needs a source
turn like every other write, so `write_memory` first records a *note turn*: a user-role turn
in the ledger, ``[CLIENT via MCP] remember: LABEL``, meta ``{"source": "mcp", "client":
CLIENT, "tool": "write_memory"}``. The item then has source ``mcp``, that turn as its source,
and the client's name in its reason; the note and the item commit together, and a fact the
engine refuses (bad category, empty label, bad date) stores neither.

Errors the caller can fix raise `engine errors <EngineError>` or `ToolInputError`; the
server turns them into tool errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..memory import jobs
from ..memory.context.assemble import SEPARATOR
from ..memory.facts import curation
from ..memory.facts import items as item_store
from ..memory.facts.remember import Fact, check_fact, remember
from ..memory.ledger import sources
from ..memory.ledger import turns as ledger
from ..memory.store.db import write
from ..memory.store.errors import InvalidInput
from ..memory.store.timeutil import display, parse_instant, to_stored
from ..memory.text.render import entry
from ..runtime import Runtime

ACTIVE_OR_PAST = ("active", "superseded", "evicted", "done")
"""What a search may show: never what the person retracted."""
CONTENT_MAX = 100_000
"""Longest turn a client may log (characters)."""


class ToolInputError(Exception):
    """Arguments a tool cannot use (beyond what its schema checks)."""


@dataclass(frozen=True)
class Caller:
    """Who is calling: the client's name from its ``initialize`` request (``clientInfo``)."""

    client: str

    @classmethod
    def named(cls, name: str | None, version: str | None = None) -> Caller:
        """A caller from clientInfo's name and version (``unknown client`` when absent)."""
        text = " ".join((name or "").split())[:80] or "unknown client"
        if version and version.strip():
            text += f" {' '.join(version.split())[:20]}"
        return cls(text)


def _after_store(rt: Runtime, appended: ledger.Appended) -> None:
    """A turn that opened a session closes the previous one: queue its digest, as a chat
    turn would (imported history excepted)."""
    closed = appended.closed_session
    if closed is not None and not sources.imported_session(rt.conn, rt.profile, closed.id):
        jobs.enqueue(
            rt.conn, profile=rt.profile, kind="digest", ref_id=closed.id, ts=appended.turn.ts
        )


def _due(rt: Runtime, due: str | None) -> str | None:
    if due is None or not due.strip():
        return None
    text = due.strip()
    try:
        moment = parse_instant(
            text if "T" in text else f"{text}T23:59:00", default_tz=rt.now().tzinfo
        )
    except InvalidInput:
        raise ToolInputError(f"due {due!r} is not a date: use YYYY-MM-DD or ISO 8601") from None
    return to_stored(moment)


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
            role="user",
            content=f"[{caller.client} via MCP] remember: {fact.label}",
            now=now,
            gap_s=rt.settings.gap_s,
            meta={"source": "mcp", "client": caller.client, "tool": "write_memory"},
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
    from ..turn.preview import preview

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


def log_turn(
    rt: Runtime, caller: Caller, *, role: str, content: str, model: str | None = None
) -> str:
    """Record one turn of the client's conversation in the ledger (``rheo mcp --log-turns``):
    the person's message (role ``user``) or the reply (``assistant``). Sessions follow the
    gap rule; a reply that answers a logged message queues fact extraction as a chat turn
    does. Returns the stored turn's id and session."""
    if role not in ledger.ROLES:
        raise ToolInputError(f"role must be user or assistant, not {role!r}")
    if not content.strip():
        raise ToolInputError("content must not be empty")
    if len(content) > CONTENT_MAX:
        raise ToolInputError(f"content is longer than {CONTENT_MAX} characters")
    meta: dict[str, Any] = {"source": "mcp", "client": caller.client}
    with write(rt.conn):
        previous = ledger.recent_turns(rt.conn, rt.profile, 1)
        if role == "assistant" and previous and previous[0].role == "user":
            meta["reply_to"] = previous[0].id  # extraction pairs the reply with it
        appended = ledger.append_turn(
            rt.conn,
            profile=rt.profile,
            role=role,
            content=content,
            now=rt.now(),
            gap_s=rt.settings.gap_s,
            model=(model or caller.client)[:100] if role == "assistant" else None,
            status="ok" if role == "assistant" else None,
            meta=meta,
        )
        turn = appended.turn
        _after_store(rt, appended)
        queued = False
        if (
            role == "assistant"
            and previous
            and previous[0].role == "user"
            and previous[0].session_id == turn.session_id
        ):
            queued = jobs.enqueue(
                rt.conn, profile=rt.profile, kind="extract", ref_id=turn.id, ts=turn.ts
            )
    if queued:
        from ..background.worker import kick_background

        kick_background(rt)
    from ..memory.ledger.sessions import get_session

    number = get_session(rt.conn, rt.profile, turn.session_id).number
    return f"stored turn #{turn.id} in session s{number}" + (
        "; facts will be extracted from this exchange" if queued else ""
    )
