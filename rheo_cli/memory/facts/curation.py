"""The person's corrections to memory (PRODUCT.md: "the person can pin, correct, resolve and
forget"): pin and unpin, forget (retract), mark an open item done, list and resolve flagged
conflicts, and the versions of a fact. Each change is an event; nothing is deleted.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from ..store.api import Connection
from ..store.db import write
from ..store.errors import InvalidInput
from ..store.timeutil import to_stored
from . import events
from .items import MemoryItem, get_item, list_items, row_to_item


def _set_state(
    conn: Connection,
    profile: str,
    item_id: int,
    now: datetime,
    *,
    allowed: tuple[str, ...],
    sql: str,
    kind: str,
    verb: str,
    cause: str,
    category: str | None = None,
    source_turn_id: int | None = None,
) -> MemoryItem:
    with write(conn):
        item = get_item(conn, profile, item_id)
        if item.status not in allowed:
            raise InvalidInput(f"memory #{item_id} is {item.status}; it cannot be {verb}")
        if category is not None and item.category != category:
            raise InvalidInput(f"memory #{item_id} is not an open item ({item.category})")
        conn.execute(sql, (item_id,))
        events.append(
            conn, item_id=item_id, profile=profile, ts=to_stored(now), kind=kind, cause=cause,
            source_turn_id=source_turn_id,
        )  # fmt: skip
        return get_item(conn, profile, item_id)


def pin(
    conn: Connection,
    profile: str,
    item_id: int,
    now: datetime,
    cause: str = "pinned by the person",
) -> MemoryItem:
    """Pin an item: it reads 1.0, never decays and is never evicted; an evicted item comes
    back active. Raises NotFound, InvalidInput (superseded, retracted, or already pinned)."""
    if get_item(conn, profile, item_id).pinned:
        raise InvalidInput(f"memory #{item_id} is already pinned")
    return _set_state(
        conn,
        profile,
        item_id,
        now,
        allowed=("active", "done", "evicted"),
        sql="UPDATE memory_items SET pinned = 1, "
        "status = CASE status WHEN 'evicted' THEN 'active' ELSE status END WHERE id = ?",
        kind="pinned",
        verb="pinned",
        cause=cause,
    )


def unpin(
    conn: Connection,
    profile: str,
    item_id: int,
    now: datetime,
    cause: str = "unpinned by the person",
) -> MemoryItem:
    """Unpin an item; it decays again from its stored confidence and last reinforcement."""
    if not get_item(conn, profile, item_id).pinned:
        raise InvalidInput(f"memory #{item_id} is not pinned")
    return _set_state(
        conn,
        profile,
        item_id,
        now,
        allowed=STATUS_ANY,
        sql="UPDATE memory_items SET pinned = 0 WHERE id = ?",
        kind="unpinned",
        verb="unpinned",
        cause=cause,
    )


STATUS_ANY = ("active", "superseded", "evicted", "retracted", "done")


def forget(
    conn: Connection,
    profile: str,
    item_id: int,
    now: datetime,
    cause: str = "retracted by the person",
    source_turn_id: int | None = None,
) -> MemoryItem:
    """Retract an item: no longer injected, offered to tools or learnt again; its row and
    history stay. A conflict it was part of is cleared (there is nothing left to decide).
    ``source_turn_id``: the person's turn that asked for it, when one did."""
    with write(conn):
        item = _set_state(
            conn,
            profile,
            item_id,
            now,
            allowed=("active", "superseded", "evicted", "done"),
            sql="UPDATE memory_items SET status = 'retracted', pinned = 0, conflict_with = NULL "
            "WHERE id = ?",
            kind="retracted",
            verb="forgotten",
            cause=cause,
            source_turn_id=source_turn_id,
        )
        partners = conn.execute(
            "SELECT id FROM memory_items WHERE profile = ? AND conflict_with = ?",
            (profile, item_id),
        ).fetchall()
        for (partner,) in partners:
            conn.execute("UPDATE memory_items SET conflict_with = NULL WHERE id = ?", (partner,))
            events.append(
                conn,
                item_id=partner,
                profile=profile,
                ts=to_stored(now),
                kind="resolved",
                cause=f"the conflicting #{item_id} was retracted",
                related_item_id=item_id,
            )
        return item


def mark_done(
    conn: Connection,
    profile: str,
    item_id: int,
    now: datetime,
    cause: str = "marked done by the person",
) -> MemoryItem:
    """Close an open item (commitment); it leaves OPEN ITEMS."""
    return _set_state(
        conn,
        profile,
        item_id,
        now,
        allowed=("active",),
        sql="UPDATE memory_items SET status = 'done' WHERE id = ?",
        kind="done",
        verb="marked done",
        cause=cause,
        category="open_item",
    )


def conflicts(conn: Connection, profile: str) -> list[tuple[MemoryItem, MemoryItem]]:
    """Flagged pairs ``(newer, older)``: both confident facts on one topic, awaiting review."""
    pairs = []
    for item in list_items(conn, profile, statuses=("active",), all_assistants=True):
        if item.conflict_with is not None:
            older = get_item(conn, profile, item.conflict_with)
            if older.status != "retracted":
                pairs.append((item, older))
    return pairs


def resolve(conn: Connection, profile: str, item_id: int, now: datetime) -> MemoryItem:
    """Resolve a flagged pair by keeping ``item_id``: it becomes (or stays) the active fact,
    the other is superseded by it; both get a ``resolved`` event. Raises InvalidInput when the
    item is in no flagged pair."""
    ts = to_stored(now)
    with write(conn):
        chosen = get_item(conn, profile, item_id)
        pair = next(
            ((new, old) for new, old in conflicts(conn, profile) if item_id in (new.id, old.id)),
            None,
        )
        if pair is None:
            raise InvalidInput(f"memory #{item_id} is not part of a flagged conflict")
        new, old = pair
        other = old if chosen.id == new.id else new
        conn.execute(
            "UPDATE memory_items SET status = 'active', superseded_by = NULL, "
            "conflict_with = NULL WHERE id = ?",
            (chosen.id,),
        )
        conn.execute(
            "UPDATE memory_items SET status = 'superseded', superseded_by = ?, "
            "conflict_with = NULL WHERE id = ?",
            (chosen.id, other.id),
        )
        events.append(
            conn,
            item_id=chosen.id,
            profile=profile,
            ts=ts,
            kind="resolved",
            cause=f"kept by the person over #{other.id}",
            related_item_id=other.id,
        )
        events.append(
            conn,
            item_id=other.id,
            profile=profile,
            ts=ts,
            kind="resolved",
            cause=f"the person kept #{chosen.id} instead",
            related_item_id=chosen.id,
        )
        return get_item(conn, profile, chosen.id)


def supersede_chain(conn: Connection, profile: str, item_id: int) -> list[MemoryItem]:
    """Every version of the fact ``item_id`` belongs to, oldest first: earlier items that
    point to it through ``superseded_by`` and later ones it points to."""
    item = get_item(conn, profile, item_id)
    older: list[MemoryItem] = []
    frontier = [item.id]
    seen = {item.id}
    while frontier:
        current = frontier.pop()
        for row in conn.execute(
            "SELECT * FROM memory_items WHERE profile = ? AND superseded_by = ?",
            (profile, current),
        ):
            if row["id"] not in seen:
                seen.add(row["id"])
                older.append(row_to_item(row))
                frontier.append(row["id"])
    newer: list[MemoryItem] = []
    cursor = item
    while cursor.superseded_by is not None and cursor.superseded_by not in seen:
        seen.add(cursor.superseded_by)
        cursor = get_item(conn, profile, cursor.superseded_by)
        newer.append(cursor)
    return sorted(older, key=lambda i: i.id) + [item] + newer


CHANGES: dict[str, Callable[[Connection, str, int, datetime], MemoryItem]] = {
    "pin": pin,
    "unpin": unpin,
    "forget": forget,
    "resolve": resolve,
    "done": mark_done,
}
"""The state changes a person can make to an item, by command name: (conn, profile, id, now)."""
