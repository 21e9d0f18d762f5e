"""The current value wins: lines whose fact was later changed say so.

A turn a memory item was learnt from (or that said it again) may state a value that has since
changed (a price, an address, a date moved): the item is ``superseded`` by a newer one. Such a
turn, wherever it is injected (RELEVANT HISTORY, CURRENT SESSION, the end of the previous
session), is marked with the date of the change and the newest value (following the chain of
supersessions to its end, `note`); in RELEVANT HISTORY the turn the newest value came from
joins the candidates too, so the context never shows the old value alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import tzinfo

from ..facts.items import MemoryItem, row_to_item
from ..store.api import Connection
from ..store.timeutil import display
from ..text.render import clip

MAX_CHAIN = 20
"""Supersessions followed from one item at most (a guard against a cycle in damaged data)."""


@dataclass(frozen=True)
class Update:
    """What replaced a fact a turn stated: the newest item (``status`` 'active' normally;
    'retracted' or 'done' when the fact no longer holds at all) and when the change was made
    (stored UTC text of the first newer item)."""

    newest: MemoryItem
    changed_at: str


def updates_for(conn: Connection, profile: str, turn_ids: Iterable[int]) -> dict[int, Update]:
    """For each of ``turn_ids`` (``profile``'s turns) that a now-superseded item was learnt
    from, the `Update` that replaced it; turns without one are absent."""
    return {turn: update for turn, (_, update) in changed_in(conn, profile, turn_ids).items()}


def changed_in(
    conn: Connection, profile: str, turn_ids: Iterable[int], *, repeats: bool = False
) -> dict[int, tuple[MemoryItem, Update]]:
    """For each of ``turn_ids`` that stated a now-superseded item — it was learnt from it, or
    with ``repeats`` also said it again (a ``reinforced`` event citing it) — that old item and
    the `Update` that replaced it; turns without one are absent."""
    ids = sorted(set(turn_ids))
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = conn.store.superseded_sources(profile, ids)
    pairs = [(row["source_turn_id"], row["id"]) for row in rows]
    if repeats:
        pairs += [
            (row[0], row[1])
            for row in conn.execute(
                f"SELECT e.source_turn_id, m.id FROM memory_events e JOIN memory_items m "
                f"ON m.id = e.item_id WHERE e.source_turn_id IN ({marks}) "
                "AND e.kind = 'reinforced' AND m.profile = ? AND m.status = 'superseded' "
                "AND m.superseded_by IS NOT NULL ORDER BY m.id",
                (*ids, profile),
            ).fetchall()
        ]
    out: dict[int, tuple[MemoryItem, Update]] = {}
    for turn_id, item_id in pairs:
        if turn_id in out:
            continue
        old = _item(conn, profile, item_id)
        first = _item(conn, profile, old.superseded_by) if old and old.superseded_by else None
        if old is None or first is None:
            continue
        newest = first
        for _ in range(MAX_CHAIN):
            if newest.status != "superseded" or newest.superseded_by is None:
                break
            following = _item(conn, profile, newest.superseded_by)
            if following is None:
                break
            newest = following
        out[turn_id] = (old, Update(newest=newest, changed_at=first.created_at))
    return out


def note(update: Update, tz: tzinfo | None) -> str:
    """The mark on a line whose fact changed later: when, and the value that holds now
    (``(superseded on 2026-05-02; now: Ana lives in Lisbon)``)."""
    when = display(update.changed_at, tz, with_time=False)
    newest = update.newest
    if newest.status == "retracted":
        return f"(superseded on {when}; no longer holds)"
    if newest.status == "done":
        return f"(superseded on {when}; now done: {clip(newest.content_text(), 60)})"
    return f"(superseded on {when}; now: {clip(newest.content_text(), 60)})"


def _item(conn: Connection, profile: str, item_id: int) -> MemoryItem | None:
    row = conn.execute(
        "SELECT * FROM memory_items WHERE id = ? AND profile = ?", (item_id, profile)
    ).fetchone()
    return row_to_item(row) if row is not None else None
