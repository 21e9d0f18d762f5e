"""The memory cap (Solid# article, tier caps): past ``settings.cap`` active facts, the
least-reinforced unpinned ones are evicted — a status, not a deletion, with an event. Facts
whose validity window has ended go first, then facts a model or a client chose to write
(`fact.WRITTEN_FOR`), and only then facts the person stated."""

from __future__ import annotations

from datetime import datetime

from ..store.api import Connection
from ..store.settings import Settings
from . import events
from .fact import WRITTEN_FOR
from .items import MemoryItem, list_items


def _why(victim: MemoryItem, now: datetime) -> str:
    """Why ``victim`` went before the others (for its event)."""
    if victim.expired(now):
        return "its validity window had ended"
    if victim.source in WRITTEN_FOR:
        return f"written by a model or client ({victim.source}), least reinforced"
    return "least reinforced"


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
    """Evict unpinned facts beyond the cap (open items never count) and return their ids;
    ``keep`` (the item just written) is never evicted. Each eviction's event cites
    ``source_turn_id``, the turn of the fact that made it (so purging that turn brings the
    evicted fact back). Evicted first: facts expired at ``now``, then those a model or a client
    wrote (45 writes over MCP never push out a fact the person stated), each group the
    least reinforced first; ties go to the weaker after decay at ``now``, then the least
    recently reinforced, then the oldest.
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
            not i.expired(now),
            i.source not in WRITTEN_FOR,
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
                f"reached; {_why(victim, now)} "
                f"({victim.reinforcements} mentions)"
            ),
            source_turn_id=source_turn_id,
        )
    return [v.id for v in victims]
