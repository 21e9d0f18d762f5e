"""Reinforcement (Solid# article): a fact said again is not stored twice; the known item gains
confidence (+``reinforce_step``, max 1.0), counts one more mention, restarts its decay, and
the new wording is kept in the reinforcement's event. One turn counts once."""

from __future__ import annotations

from ..store.api import Connection
from ..store.settings import Settings
from . import events
from .candidates import on_topic, same_content
from .equivalence import equivalent
from .fact import Fact, Outcome
from .items import MemoryItem, get_item


def same_as(
    conn: Connection,
    profile: str,
    fact: Fact,
    active: list[MemoryItem],
    assistant: str | None,
    notes: list[str],
) -> MemoryItem | None:
    """The known item ``fact`` repeats, or None: one of ``active`` (the items it is compared
    with) that it is equivalent to; when there are none, the same fact under another topic in
    the scope, or for an assistant's fact the shared one it merely repeats. How it was found
    is added to ``notes``."""
    for old in active:
        if equivalent(old.label, old.properties, fact.label, fact.properties):
            return old
    if active:
        return None
    # The same fact under another topic name (the person's "remember that ..." and the
    # model's write_memory name topics differently): a repeat, not a copy.
    for old in same_content(conn, profile, fact, assistant):
        notes.append(f"the same fact as #{old.id} (topic {old.topic})")
        return old
    if assistant is not None:
        # An assistant's fact that only repeats the shared one: the shared one is reinforced
        # rather than shadowed by a copy.
        for old in on_topic(conn, profile, fact.topic, None):
            if equivalent(old.label, old.properties, fact.label, fact.properties):
                notes.append(f"the same as shared #{old.id}")
                return old
    return None


def repeat(
    conn: Connection,
    old: MemoryItem,
    fact: Fact,
    ts: str,
    source: str,
    source_turn_id: int | None,
    settings: Settings,
    notes: list[str],
) -> Outcome:
    """``fact`` is ``old`` said again: reinforce it, unless this turn already counted (one
    turn reinforces a fact once, however often it is read: retries, extraction and digest of
    the same exchange)."""
    if source_turn_id is not None and mentioned_in(conn, old.id, source_turn_id):
        return Outcome("skipped", old, note=f"turn #{source_turn_id} already counted")
    item = reinforce(conn, old, fact, ts, source, source_turn_id, settings)
    return Outcome("reinforced", item, note="; ".join(notes))


def reinforce(
    conn: Connection,
    item: MemoryItem,
    fact: Fact,
    ts: str,
    source: str,
    source_turn_id: int | None,
    settings: Settings,
) -> MemoryItem:
    """Count ``fact`` as one more mention of ``item`` (at ``ts``, stored UTC) and return the
    item as it is now; a pin asked for with it pins the item."""
    confidence = min(1.0, round(item.confidence + settings.reinforce_step, 6))
    pinned = item.pinned or fact.pinned
    conn.execute(
        "UPDATE memory_items SET confidence = ?, reinforcements = reinforcements + 1, "
        "reinforced_at = ?, pinned = ? WHERE id = ?",
        (1.0 if pinned else confidence, ts, int(pinned), item.id),
    )
    events.append(
        conn,
        item_id=item.id,
        profile=item.profile,
        ts=ts,
        kind="reinforced",
        cause=f'mentioned again ({source}): "{fact.wording()}"',
        source_turn_id=source_turn_id,
        data={
            "confidence": confidence,
            "before": item.confidence,
            "wording": fact.label,
            "properties": fact.properties,
        },
    )
    if fact.pinned and not item.pinned:
        events.pinned_on_request(
            conn, item_id=item.id, profile=item.profile, ts=ts, source_turn_id=source_turn_id
        )
    return get_item(conn, item.profile, item.id)


def mentioned_in(conn: Connection, item_id: int, turn_id: int) -> bool:
    """Whether ``turn_id`` already created or reinforced item ``item_id``."""
    row = conn.execute(
        "SELECT 1 FROM memory_events WHERE item_id = ? AND source_turn_id = ? "
        "AND kind IN ('created', 'reinforced') LIMIT 1",
        (item_id, turn_id),
    ).fetchone()
    return row is not None


def writes_from_turn(conn: Connection, turn_id: int) -> int:
    """How many facts turn ``turn_id`` has created or reinforced so far."""
    row = conn.execute(
        "SELECT count(*) FROM memory_events WHERE source_turn_id = ? "
        "AND kind IN ('created', 'reinforced')",
        (turn_id,),
    ).fetchone()
    return int(row[0])
