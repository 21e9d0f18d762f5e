"""The tools Claude gets in a chat call (Rheo article §05): ``write_memory`` to store a durable
fact,
``memory_search`` and ``chat_search`` to look further back than what was injected.

Whatever the tool input says, rheo enforces ownership (the profile, the source turn and the
assistant are the current turn's) and append-only history (a write goes through the memory
write path). In a chat with a named assistant, ``write_memory`` may say ``scope``: ``shared``
(about the person, every assistant sees it; the default) or ``assistant`` (this assistant's
own work) — never which assistant.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC
from typing import Any

from ...memory.facts import items as item_store
from ...memory.facts.items import CATEGORIES
from ...memory.facts.parsing import read_fact
from ...memory.facts.pins import own_words, pin_requested
from ...memory.facts.reinforce import writes_from_turn
from ...memory.facts.remember import remember
from ...memory.facts.scope import ASSISTANT, SCOPES, assistant_in, read_scope
from ...memory.ledger import turns as ledger
from ...memory.store.timeutil import display
from ...memory.text.render import entry
from ...providers.base import ToolCall, ToolSpec
from ...runtime import Runtime
from ...turn import wiring
from ...turn.assistant import Assistant

WRITE_MEMORY = ToolSpec(
    name="write_memory",
    description=(
        "Store a durable fact about the person so it is remembered in later conversations: a "
        "preference, a person in their life, a project detail, a goal, a deadline, a decision, "
        "or a commitment they made (category open_item). Use the person's language. A new fact "
        "on an existing topic replaces the old one, which stays in the history."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "category": {"type": "string", "enum": list(CATEGORIES)},
            "topic": {"type": "string", "description": "Short key, 1-4 words: 'arowyn school'."},
            "content": {
                "type": "object",
                "properties": {
                    "label": {"type": "string", "description": "The fact, one sentence."},
                    "properties": {"type": "object", "description": "Details as key/values."},
                },
                "required": ["label"],
            },
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "reason": {"type": "string", "description": "Why it is worth remembering."},
            "due": {"type": "string", "description": "ISO 8601 deadline, for open items."},
        },
        "required": ["category", "topic", "content"],
    },
)

MEMORY_SEARCH = ToolSpec(
    name="memory_search",
    description="Search the stored facts about the person (including replaced ones) by words.",
    input_schema={
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
    },
)

CHAT_SEARCH = ToolSpec(
    name="chat_search",
    description=(
        "Search every earlier conversation turn with the person by keywords; returns dated "
        "turns, best matches first."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 20},
        },
        "required": ["query"],
    },
)

SPECS = [WRITE_MEMORY, MEMORY_SEARCH, CHAT_SEARCH]

SCOPE_PROPERTY = {
    "type": "string",
    "enum": list(SCOPES),
    "description": (
        "shared: about the person or their company, for every assistant (the default); "
        "assistant: only about how you, this assistant, should do your work for them."
    ),
}


def specs_for(assistant: str | None) -> list[ToolSpec]:
    """The tools for a chat with ``assistant`` (None: `SPECS`): ``write_memory`` then also
    takes ``scope``."""
    if assistant is None:
        return list(SPECS)
    schema = dict(WRITE_MEMORY.input_schema)
    schema["properties"] = {**schema["properties"], "scope": SCOPE_PROPERTY}
    write = ToolSpec(
        name=WRITE_MEMORY.name,
        description=WRITE_MEMORY.description
        + " Say scope assistant for a fact only about your own work with them.",
        input_schema=schema,
    )
    return [write, MEMORY_SEARCH, CHAT_SEARCH]


MAX_WRITES_PER_TURN = 5
"""At most this many facts one turn's tool calls may write (a runaway loop evicts nothing)."""


def _write_memory(rt: Runtime, data: dict[str, Any], turn: ledger.Turn) -> str:
    if writes_from_turn(rt.conn, turn.id) >= MAX_WRITES_PER_TURN:
        return f"not stored: at most {MAX_WRITES_PER_TURN} memories per message"
    notes: list[str] = []
    # A due date given as a date is the end of that day where the person is.
    zone = rt.now().tzinfo or UTC
    candidate = read_fact(
        data, 1, notes, known_ids={}, turn_ids=None, person_text=turn.content, tz=zone, now=rt.now()
    )
    if candidate is None:
        return "not stored: " + "; ".join(notes)
    fact = replace(candidate.fact, pinned=pin_requested(own_words(turn.content), candidate.fact))
    own = assistant_in(turn.meta)  # the turn's assistant, whatever the input names
    if data.get("scope") is not None and read_scope(data.get("scope")) is None:
        notes.append(f"scope {str(data.get('scope'))[:40]!r} ignored: shared or assistant")
    outcome = remember(
        rt.conn,
        fact,
        source="tool",
        now=rt.now(),
        settings=rt.settings,
        source_turn_id=turn.id,
        assistant=own if read_scope(data.get("scope")) == ASSISTANT else None,
    )
    return outcome.describe() + (f" ({'; '.join(notes)})" if notes else "")


def _memory_search(rt: Runtime, data: dict[str, Any], turn: ledger.Turn) -> str:
    query = str(data.get("query", ""))
    statuses = ("active", "superseded", "evicted", "done")  # never what the person retracted
    found = item_store.search_items(
        rt.conn,
        turn.profile,
        query,
        statuses=statuses,
        limit=10,
        assistant=assistant_in(turn.meta),
    )
    if not found:
        return "no stored facts match"
    now = rt.now()
    return "\n".join(
        entry(
            f"#{i.id} ({i.category}, {i.status}, confidence {i.effective(now, rt.settings):.2f}, "
            f"since {display(i.created_at, now.tzinfo, with_time=False)}) ",
            i.content_text(),
        )
        for i, _ in found
    )


def _chat_search(rt: Runtime, data: dict[str, Any], turn: ledger.Turn) -> str:
    query = str(data.get("query", ""))
    try:
        limit = max(1, min(20, int(data.get("limit", 8))))
    except (TypeError, ValueError):
        limit = 8
    found = ledger.search_turns(rt.conn, turn.profile, query, limit=limit, any_term=True)
    found = [(t, s) for t, s in found if t.id != turn.id]
    if not found:
        return "no earlier turns match"
    zone = rt.now().tzinfo
    return "\n".join(
        entry(f"#{t.id} [{display(t.ts, zone)}] {t.role}: ", t.content[:400]) for t, _ in found
    )


_RUNNERS = {
    "write_memory": _write_memory,
    "memory_search": _memory_search,
    "chat_search": _chat_search,
}


def run_tool(rt: Runtime, call: ToolCall, turn: ledger.Turn) -> str:
    """Run one tool call made during ``turn`` (the person's stored turn); returns the text
    result for the model. Errors become a result text, never an exception."""
    runner = _RUNNERS.get(call.name)
    if runner is None:
        return f"unknown tool {call.name!r}"
    if not isinstance(call.input, dict):
        return "the tool input must be an object"
    try:
        return runner(rt, call.input, turn)
    except Exception as exc:  # noqa: BLE001 - a tool failure is reported to the model
        from ...memory.store.errors import EngineError

        if isinstance(exc, EngineError):
            return f"error: {exc}"
        return f"error: {type(exc).__name__}: {json.dumps(str(exc))[:200]}"


def make_assistant(rt: Runtime) -> Assistant:
    """An Assistant for ``rt`` with the chat's memory tools (`wiring.make_assistant`: an
    extraction job after each reply, a digest job when a session closes)."""
    return wiring.make_assistant(
        rt,
        tools=specs_for(rt.assistant_name),
        run_tool=lambda call, turn: run_tool(rt, call, turn),
    )
