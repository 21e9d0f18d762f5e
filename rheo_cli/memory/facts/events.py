"""The history of memory items: every change is an appended event (never edited or deleted)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..store.api import Connection
from . import hotcache

EVENT_KINDS = (
    "created",
    "reinforced",
    "superseded",
    "conflict_flagged",
    "resolved",
    "pinned",
    "unpinned",
    "retracted",
    "evicted",
    "done",
    "reopened",
)


@dataclass(frozen=True)
class Event:
    """One change to an item: what (``kind``), when (stored UTC), why (``cause``)."""

    id: int
    item_id: int
    ts: str
    kind: str
    cause: str
    related_item_id: int | None
    source_turn_id: int | None
    data: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` shape of an event."""
        return {
            "id": self.id,
            "item_id": self.item_id,
            "ts": self.ts,
            "kind": self.kind,
            "cause": self.cause,
            "related_item_id": self.related_item_id,
            "source_turn_id": self.source_turn_id,
            "data": self.data,
        }


def append(
    conn: Connection,
    *,
    item_id: int,
    profile: str,
    ts: str,
    kind: str,
    cause: str,
    related_item_id: int | None = None,
    source_turn_id: int | None = None,
    data: dict[str, Any] | None = None,
) -> int:
    """Append one event (inside the caller's transaction); returns its id."""
    cur = conn.execute(
        "INSERT INTO memory_events(item_id, profile, ts, kind, cause, related_item_id, "
        "source_turn_id, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            item_id,
            profile,
            ts,
            kind,
            cause,
            related_item_id,
            source_turn_id,
            json.dumps(data or {}, ensure_ascii=False),
        ),
    )
    assert cur.lastrowid is not None
    hotcache.written(profile)  # every memory change is an event: the hot cache is dropped
    return cur.lastrowid


def pinned_on_request(
    conn: Connection, *, item_id: int, profile: str, ts: str, source_turn_id: int | None
) -> int:
    """Append the ``pinned`` event of an item pinned because the person asked to always
    remember it (with the fact written or said again); returns its id."""
    return append(
        conn,
        item_id=item_id,
        profile=profile,
        ts=ts,
        kind="pinned",
        cause="the person asked to always remember it",
        source_turn_id=source_turn_id,
    )


def history(conn: Connection, profile: str, item_id: int) -> list[Event]:
    """Every event of an item, oldest first."""
    rows = conn.execute(
        "SELECT * FROM memory_events WHERE item_id = ? AND profile = ? ORDER BY id",
        (item_id, profile),
    ).fetchall()
    return [
        Event(
            id=r["id"],
            item_id=r["item_id"],
            ts=r["ts"],
            kind=r["kind"],
            cause=r["cause"],
            related_item_id=r["related_item_id"],
            source_turn_id=r["source_turn_id"],
            data=json.loads(r["data"] or "{}"),
        )
        for r in rows
    ]
