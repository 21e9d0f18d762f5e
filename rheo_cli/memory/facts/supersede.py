"""When a new fact replaces known ones (Rheo article §05: conflicts are preserved): the old
item keeps ``superseded_by``, two confident contradicting facts are flagged for review, a
pinned fact gives way only to a confident one, and an open item a statement fulfils or
cancels is marked done rather than replaced."""

from __future__ import annotations

from datetime import datetime

from ..store.api import Connection
from ..store.settings import Settings
from . import events
from .equivalence import closes
from .fact import Fact, Relation
from .items import MemoryItem, get_item


def refines(old: MemoryItem, source: str, source_turn_id: int | None) -> bool:
    """Whether a fact from ``source_turn_id`` restates ``old`` from the very same turn (the
    extractor refining what rheo stored for an explicit request): not a contradiction."""
    return (
        source != "manual" and source_turn_id is not None and old.source_turn_id == source_turn_id
    )


def carries_pin(active: list[MemoryItem], source: str, source_turn_id: int | None) -> bool:
    """Whether the new fact inherits a pin: it refines a pinned item of its own turn."""
    return any(old.pinned and refines(old, source, source_turn_id) for old in active)


def pin_guard(
    active: list[MemoryItem],
    confidence: float,
    source: str,
    source_turn_id: int | None,
    settings: Settings,
) -> str | None:
    """Why a fact of ``confidence`` may not replace one of ``active`` (a pinned item, which
    only a confident fact replaces, >= ``conflict_threshold``), or None when it may."""
    for old in active:
        if (
            old.pinned
            and confidence < settings.conflict_threshold
            and not refines(old, source, source_turn_id)
        ):
            return (
                f"pinned #{old.id} is kept: a pinned fact is replaced only by a "
                f"confident one (>= {settings.conflict_threshold:.2f}; this one is "
                f"{confidence:.2f})"
            )
    return None


def closing(active: list[MemoryItem], fact: Fact, relation: Relation | None) -> MemoryItem | None:
    """The open item among ``active`` that ``fact`` fulfils or cancels — the writer says so
    (``relation="done"``) or its words do (`equivalence.closes`) — or None."""
    for old in active:
        if old.category == "open_item" and (
            relation == "done" or closes(old.content_text(), fact.label)
        ):
            return old
    return None


def close(
    conn: Connection,
    item: MemoryItem,
    fact: Fact,
    ts: str,
    source: str,
    source_turn_id: int | None,
) -> MemoryItem:
    """Mark open item ``item`` done because of ``fact``, whose wording the event keeps."""
    conn.execute("UPDATE memory_items SET status = 'done' WHERE id = ?", (item.id,))
    events.append(
        conn,
        item_id=item.id,
        profile=item.profile,
        ts=ts,
        kind="done",
        cause=f'fulfilled or cancelled ({source}): "{fact.wording()}"',
        source_turn_id=source_turn_id,
        data={"wording": fact.label, "properties": fact.properties},
    )
    return get_item(conn, item.profile, item.id)


def supersede_all(
    conn: Connection,
    active: list[MemoryItem],
    new: MemoryItem,
    *,
    ts: str,
    now: datetime,
    source: str,
    source_turn_id: int | None,
    relation: Relation | None,
    settings: Settings,
    restated: MemoryItem | None = None,
    announced: bool = False,
    why: str = "",
) -> tuple[MemoryItem | None, bool]:
    """Let ``new`` supersede every item of ``active``, flagging a pair for review when both
    are confident (>= ``conflict_threshold``, the old one after decay at ``now``) unless the
    new one refines the old, ends it (``relation="done"``), is ``restated`` (the same words
    filed anew: as an open item, with another due date) or was ``announced`` as a change by
    the person ("I moved", "no longer": `changes.stated`). Returns the first item superseded
    (None when ``active`` is empty) and whether that pair was flagged. ``why`` is added to
    each supersession's event (who decided it, and their reason)."""
    previous: MemoryItem | None = None
    conflict = False
    for old in active:
        # Compared at the two decimals rheo shows: minutes of decay don't undo a tie.
        old_conf = round(old.effective(now, settings), 2)
        flagged = (
            relation != "done"
            and not announced
            and (restated is None or old.id != restated.id)
            and not refines(old, source, source_turn_id)
            and old_conf >= settings.conflict_threshold
            and round(new.confidence, 2) >= settings.conflict_threshold
        )
        _supersede(conn, old, new, ts, source_turn_id, flagged, old_conf, why)
        if previous is None:
            previous, conflict = old, flagged
    return previous, conflict


def supersede_one(
    conn: Connection,
    old: MemoryItem,
    new: MemoryItem,
    ts: str,
    source_turn_id: int | None,
    *,
    cause: str,
) -> None:
    """Mark ``old`` superseded by ``new`` (stored UTC ``ts``) with a ``superseded`` event
    saying ``cause``; no conflict is flagged."""
    conn.execute(
        "UPDATE memory_items SET status = 'superseded', superseded_by = ? WHERE id = ?",
        (new.id, old.id),
    )
    events.append(
        conn,
        item_id=old.id,
        profile=old.profile,
        ts=ts,
        kind="superseded",
        cause=cause,
        related_item_id=new.id,
        source_turn_id=source_turn_id,
    )


def _supersede(
    conn: Connection,
    old: MemoryItem,
    new: MemoryItem,
    ts: str,
    source_turn_id: int | None,
    flagged: bool,
    old_confidence: float,
    why: str = "",
) -> None:
    cause = f"replaced by #{new.id}: {new.content_text()}" + (f" [{why}]" if why else "")
    supersede_one(conn, old, new, ts, source_turn_id, cause=cause)
    if flagged:
        conn.execute("UPDATE memory_items SET conflict_with = ? WHERE id = ?", (old.id, new.id))
        for a, b in ((new, old), (old, new)):
            events.append(
                conn,
                item_id=a.id,
                profile=a.profile,
                ts=ts,
                kind="conflict_flagged",
                cause=(
                    f"#{new.id} ({new.confidence:.2f}) contradicts #{old.id} "
                    f"({old_confidence:.2f}); both confident"
                ),
                related_item_id=b.id,
                source_turn_id=source_turn_id,
            )
