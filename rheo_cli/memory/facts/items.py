"""Memory items (Rheo article §05; Solid# article): durable facts, read side.

A memory item is immutable content (category, topic, label, properties) plus mutable state
(stored confidence, reinforcements, pinned, status, superseded_by, conflict_with) whose every
change is an event in ``memory_events``. The write path is `remember`; this module reads.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..store.api import Connection, Row
from ..store.errors import NotFound
from ..store.settings import Settings
from ..store.timeutil import from_stored
from ..text import fts
from .categories import CATEGORIES as CATEGORIES
from .decay import effective_confidence
from .scope import view_clause

STATUSES = ("active", "superseded", "evicted", "retracted", "done")


@dataclass(frozen=True)
class MemoryItem:
    """One memory item row. Times are stored UTC text; ``confidence`` is the stored value."""

    id: int
    profile: str
    category: str
    topic: str
    label: str
    properties: dict[str, Any]
    confidence: float
    reinforcements: int
    pinned: bool
    reason: str
    source: str
    source_turn_id: int | None
    created_at: str
    reinforced_at: str
    status: str
    superseded_by: int | None
    conflict_with: int | None
    due_at: str | None
    assistant: str | None = None
    """None: shared (every assistant sees it); else the one assistant it is specific to."""
    valid_from: str | None = None
    """When the fact starts to hold (stored UTC text; None: since it was said)."""
    valid_until: str | None = None
    """When the fact stops holding ("until Friday": the end of Friday; None: open-ended)."""

    def expired(self, now: datetime) -> bool:
        """Whether the fact's validity window ended at or before ``now`` (aware): it is kept
        and found by search, but no longer injected as current."""
        return self.valid_until is not None and from_stored(self.valid_until) <= now

    def state(self, now: datetime) -> str:
        """The status people see: ``expired`` for an active fact past its window, else
        ``status``."""
        return "expired" if self.status == "active" and self.expired(now) else self.status

    def content_text(self) -> str:
        """Label and properties as one line: ``Arowyn school (school: Crawford Bay; grade: 9)``."""
        if not self.properties:
            return self.label
        props = "; ".join(f"{k}: {_prop(v)}" for k, v in self.properties.items())
        return f"{self.label} ({props})"

    def effective(self, now: datetime, settings: Settings) -> float:
        """Effective confidence at ``now`` after decay (pinned: 1.0)."""
        return effective_confidence(
            self.confidence,
            from_stored(self.reinforced_at),
            now,
            pinned=self.pinned,
            floor=settings.floor,
            decay_days=settings.decay_days,
        )

    def to_json(self, now: datetime, settings: Settings) -> dict[str, Any]:
        """The ``--json`` shape: id, topic, category, content{label, properties}, confidence
        (effective now), stored_confidence, reinforcements, pinned, status (``expired`` for
        an active fact past its window), superseded_by, conflict, source_turn_id, created_at,
        ..., valid_from, valid_until (stored UTC text or null)."""
        return {
            "id": self.id,
            "topic": self.topic,
            "category": self.category,
            "content": {"label": self.label, "properties": self.properties},
            "text": self.content_text(),
            "confidence": round(self.effective(now, settings), 4),
            "stored_confidence": round(self.confidence, 4),
            "reinforcements": self.reinforcements,
            "pinned": self.pinned,
            "status": self.state(now),
            "superseded_by": self.superseded_by,
            "conflict": self.conflict_with,
            "reason": self.reason,
            "source": self.source,
            "source_turn_id": self.source_turn_id,
            "created_at": self.created_at,
            "reinforced_at": self.reinforced_at,
            "due_at": self.due_at,
            "assistant": self.assistant,
            "valid_from": self.valid_from,
            "valid_until": self.valid_until,
        }


def _prop(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def row_to_item(row: Row) -> MemoryItem:
    """Build a MemoryItem from a ``memory_items`` row."""
    try:
        props = json.loads(row["properties"])
    except (TypeError, ValueError):
        props = {}
    return MemoryItem(
        id=row["id"],
        profile=row["profile"],
        category=row["category"],
        topic=row["topic"],
        label=row["label"],
        properties=props if isinstance(props, dict) else {},
        confidence=row["confidence"],
        reinforcements=row["reinforcements"],
        pinned=bool(row["pinned"]),
        reason=row["reason"],
        source=row["source"],
        source_turn_id=row["source_turn_id"],
        created_at=row["created_at"],
        reinforced_at=row["reinforced_at"],
        status=row["status"],
        superseded_by=row["superseded_by"],
        conflict_with=row["conflict_with"],
        due_at=row["due_at"],
        assistant=row["assistant"],
        valid_from=row["valid_from"],
        valid_until=row["valid_until"],
    )


def get_item(conn: Connection, profile: str, item_id: int) -> MemoryItem:
    """Item ``item_id`` of ``profile``; raises NotFound otherwise."""
    row = conn.execute(
        "SELECT * FROM memory_items WHERE id = ? AND profile = ?", (item_id, profile)
    ).fetchone()
    if row is None:
        raise NotFound(f"no memory item #{item_id} in profile {profile!r}")
    return row_to_item(row)


def list_items(
    conn: Connection,
    profile: str,
    *,
    statuses: tuple[str, ...] | None = ("active",),
    category: str | None = None,
    exclude_category: str | None = None,
    limit: int | None = None,
    assistant: str | None = None,
    all_assistants: bool = False,
) -> list[MemoryItem]:
    """Items of ``profile`` with these statuses (None: all), newest first.

    Only those ``assistant`` sees (see `scope`): with None the shared items, with a name the
    shared ones plus its own, its own winning on a topic; ``all_assistants`` lifts the filter.
    """
    sql = "SELECT m.* FROM memory_items m WHERE m.profile = ?"
    args: list[Any] = [profile]
    if statuses is not None:
        sql += f" AND m.status IN ({','.join('?' * len(statuses))})"
        args.extend(statuses)
    if category is not None:
        sql += " AND m.category = ?"
        args.append(category)
    if exclude_category is not None:
        sql += " AND m.category != ?"
        args.append(exclude_category)
    if not all_assistants:
        clause, extra = view_clause(assistant)
        sql += clause
        args.extend(extra)
    sql += " ORDER BY m.id DESC"
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    return [row_to_item(r) for r in conn.execute(sql, args).fetchall()]


def search_items(
    conn: Connection,
    profile: str,
    query: str,
    *,
    statuses: tuple[str, ...] | None = ("active",),
    any_term: bool = True,
    limit: int = 50,
    assistant: str | None = None,
    all_assistants: bool = False,
) -> list[tuple[MemoryItem, float]]:
    """FTS5 search over item topic, label and properties: ``[(item, bm25)]``, best first.

    Scoped like `list_items` (``assistant``, ``all_assistants``)."""
    terms = fts.terms(query)
    if not terms:
        return []
    rows = conn.store.search_items(
        profile,
        terms,
        any_term=any_term,
        statuses=statuses,
        limit=limit,
        view=("", []) if all_assistants else view_clause(assistant),
    )
    return [(row_to_item(r), float(r["score"])) for r in rows]
