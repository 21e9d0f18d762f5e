"""The memory cap (Solid# article, tier caps): past ``settings.cap`` active facts, the
least-reinforced unpinned ones are evicted — a status, not a deletion, with an event."""

from __future__ import annotations

from datetime import datetime

from ..store.api import Connection
from ..store.settings import Settings
from . import events
from .items import list_items


def enforce_cap(
    conn: Connection,
    profile: str,
    assistant: str | None,
    ts: str,
    settings: Settings,
    now: datetime,
    *,
    keep: int | None = None,
    source_turn_id: int | None = None,
) -> list[int]:
    """Evict the least-reinforced unpinned facts beyond the cap (open items never count) and
    return their ids; ``keep`` (the item just written) is never evicted. Each eviction's event
    cites ``source_turn_id``, the turn of the fact that made it (so purging that turn brings
    the evicted fact back). Ties go to the
    weaker after decay at ``now``, then the least recently reinforced, then the oldest.
    The cap counts per profile and assistant: shared facts (None) are one bucket, each
    assistant's own another."""
    candidates = [
        i
        for i in list_items(conn, profile, statuses=("active",), all_assistants=True)
        if i.assistant == assistant and not i.pinned and i.category != "open_item"
    ]
    excess = len(candidates) - settings.cap
    if excess <= 0:
        return []
    candidates.sort(
        key=lambda i: (
            i.reinforcements,
            i.effective(now, settings),
            i.reinforced_at,
            i.id,
        )
    )
    victims = [i for i in candidates if i.id != keep][:excess]
    for victim in victims:
        conn.execute("UPDATE memory_items SET status = 'evicted' WHERE id = ?", (victim.id,))
        events.append(
            conn,
            item_id=victim.id,
            profile=profile,
            ts=ts,
            kind="evicted",
            cause=(
                f"memory cap of {settings.cap}{' for ' + assistant if assistant else ''} "
                "reached; least reinforced "
                f"({victim.reinforcements} mentions)"
            ),
            source_turn_id=source_turn_id,
        )
    return [v.id for v in victims]
