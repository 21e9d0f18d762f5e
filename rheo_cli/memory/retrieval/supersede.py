"""The current value wins: history lines whose fact was later changed say so.

A turn a memory item was learnt from may state a value that has since changed (a price, an
address, a date moved): the item is ``superseded`` by a newer one. When such a turn is a
RELEVANT HISTORY line, the line is marked with the date of the change and the newest value
(following the chain of supersessions to its end), and the turn the newest value came from
joins the candidates, so the context never shows the old value alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..facts.items import MemoryItem, row_to_item
from ..store.api import Connection

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
    ids = sorted(set(turn_ids))
    if not ids:
        return {}
    rows = conn.store.superseded_sources(profile, ids)
    out: dict[int, Update] = {}
    for row in rows:
        first = _item(conn, profile, row["superseded_by"])
        if first is None:
            continue
        newest = first
        for _ in range(MAX_CHAIN):
            if newest.status != "superseded" or newest.superseded_by is None:
                break
            following = _item(conn, profile, newest.superseded_by)
            if following is None:
                break
            newest = following
        out[row["source_turn_id"]] = Update(newest=newest, changed_at=first.created_at)
    return out


def _item(conn: Connection, profile: str, item_id: int) -> MemoryItem | None:
    row = conn.execute(
        "SELECT * FROM memory_items WHERE id = ? AND profile = ?", (item_id, profile)
    ).fetchone()
    return row_to_item(row) if row is not None else None
