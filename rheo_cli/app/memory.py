"""Memory items for a person: list, search and show them, add one by hand, pin, unpin,
forget, resolve a conflict, mark an open item done — the same operations whichever front end
asks (``rheo memory``, ``rheo items``, the REPL's slash commands, Telegram's ``/memory``).

Every function takes the `App` first and works on its profile, seeing what its assistant
sees (the shared items plus the assistant's own, its own winning on a topic; without an
assistant, the shared ones) unless ``all_assistants`` says otherwise. Items are the engine's
`MemoryItem`: stored UTC text for times, ``item.effective(app.now(), app.settings)`` for the
confidence after decay, ``item.to_json(...)`` for the ``--json`` shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..errors import RheoError, UsageError
from ..memory import due as due_rule
from ..memory.facts import curation, events, items
from ..memory.facts.events import Event
from ..memory.facts.fact import Outcome
from ..memory.facts.items import CATEGORIES, MemoryItem
from ..memory.store.errors import InvalidInput
from ..memory.store.timeutil import to_stored

if TYPE_CHECKING:
    from .app import App

__all__ = [
    "CATEGORIES",
    "CHANGES",
    "Change",
    "Detail",
    "Event",
    "MemoryItem",
    "Outcome",
    "add",
    "change",
    "conflicts",
    "is_overdue",
    "memories",
    "open_items",
    "recent",
    "resolve_due",
    "search",
    "show",
]

CHANGES = ("pin", "unpin", "forget", "resolve", "done")
"""The changes a person makes to an item by name (`change`)."""


def _statuses(inactive: bool) -> tuple[str, ...] | None:
    return None if inactive else ("active",)


def memories(
    app: App,
    *,
    inactive: bool = False,
    category: str | None = None,
    open_items: bool = True,
    all_assistants: bool = False,
) -> list[MemoryItem]:
    """Active items, most confident first (effective confidence now), then newest first;
    with ``inactive`` the superseded, evicted, retracted and done ones too, after the active
    ones in the same order. ``category``: only that one; ``open_items`` False leaves
    commitments out (they have `open_items`). Raises UsageError for an unknown category."""
    if category is not None and category not in CATEGORIES:
        raise UsageError(f"unknown category {category!r}; use one of {', '.join(CATEGORIES)}")
    found = items.list_items(
        app.conn,
        app.profile,
        statuses=_statuses(inactive),
        category=category,
        exclude_category=None if open_items else "open_item",
        assistant=app.assistant_name,
        all_assistants=all_assistants,
    )
    now, settings = app.now(), app.settings
    found.sort(key=lambda i: (i.status != "active", -i.effective(now, settings), -i.id))
    return found


def search(
    app: App,
    query: str,
    *,
    inactive: bool = False,
    limit: int = 20,
    all_assistants: bool = False,
) -> list[MemoryItem]:
    """Items whose topic, label or properties hold any word of ``query`` (full-text search),
    best match first, at most ``limit``; active ones only unless ``inactive``."""
    found = items.search_items(
        app.conn,
        app.profile,
        query,
        statuses=_statuses(inactive),
        limit=limit,
        assistant=app.assistant_name,
        all_assistants=all_assistants,
    )
    return [item for item, _ in found]


def open_items(app: App, *, done: bool = False, all_assistants: bool = False) -> list[MemoryItem]:
    """Active open items (commitments), soonest due first (those without a due date last,
    then by id); with ``done`` the done ones too, after the active ones."""
    found = items.list_items(
        app.conn,
        app.profile,
        category="open_item",
        statuses=("active", "done") if done else ("active",),
        assistant=app.assistant_name,
        all_assistants=all_assistants,
    )
    found.sort(key=lambda i: (i.status != "active", i.due_at or "9999", i.id))
    return found


def recent(app: App, *, open_items_only: bool = False, limit: int = 100) -> list[MemoryItem]:
    """The newest active items (open items only with ``open_items_only``), newest first, at
    most ``limit``: what an id may be completed to."""
    return items.list_items(
        app.conn,
        app.profile,
        category="open_item" if open_items_only else None,
        limit=limit,
        assistant=app.assistant_name,
    )


@dataclass(frozen=True)
class Detail:
    """One item with its ``history`` (every event, oldest first: its kind, cause, time and
    source turn) and ``versions`` (every item of its supersede chain, this one included,
    oldest first by id)."""

    item: MemoryItem
    history: list[Event]
    versions: list[MemoryItem]


def show(app: App, item_id: int) -> Detail:
    """Item ``item_id`` of the profile, whatever its status or assistant, with its history
    and versions. Raises NotFound for an id the profile does not have."""
    item = items.get_item(app.conn, app.profile, item_id)
    history = events.history(app.conn, app.profile, item_id)
    versions = curation.supersede_chain(app.conn, app.profile, item_id)
    return Detail(item=item, history=history, versions=sorted(versions, key=lambda v: v.id))


def resolve_due(text: str, now: datetime) -> datetime:
    """The deadline ``text`` means (``friday``, ``next monday``, ``in 2 weeks``,
    ``2026-12-24``) as an aware datetime in ``now``'s zone, by the one due-date rule (a day
    is its end, 23:59; an ISO 8601 date-time is kept as written). Raises InvalidInput."""
    return due_rule.resolve(text, now)


def add(
    app: App,
    text: str,
    topic: str,
    *,
    category: str | None = None,
    confidence: float | None = None,
    pinned: bool = False,
    due: datetime | None = None,
) -> Outcome:
    """Write a fact the person gave by hand (source ``manual``): created, or the same fact
    reinforced, or one on the same topic superseded (see `remember`). ``category`` defaults
    to ``open_item`` with a ``due`` moment, else ``fact``; ``confidence`` None is the default
    (0.8); the fact is the assistant's own when the App has one, else shared.

    Returns the engine's `Outcome` (``action``, ``item``, ``previous``, ``conflict``,
    ``evicted``). Raises InvalidInput for a bad fact (unknown category, empty text) or a due
    moment the store cannot hold, RheoError (exit 1) when a pinned fact was kept over a less
    confident one."""
    from ..memory.facts.remember import Fact, remember

    fact = Fact(
        category=category or ("open_item" if due is not None else "fact"),
        topic=topic,
        label=text,
        confidence=confidence,
        pinned=pinned,
        reason="added by the person",
        due_at=to_stored(due) if due is not None else None,
    )
    outcome = remember(
        app.conn,
        fact,
        source="manual",
        now=app.now(),
        settings=app.settings,
        profile=app.profile,
        assistant=app.assistant_name,
    )
    if outcome.item is None:
        raise RheoError(outcome.describe())
    return outcome


@dataclass(frozen=True)
class Change:
    """What `change` left: the ``item`` as it is now, and ``already`` True when the change
    had been made before (nothing was written)."""

    item: MemoryItem
    already: bool


def change(app: App, action: str, item_id: int) -> Change:
    """Make change ``action`` (one of `CHANGES`) to item ``item_id``: ``pin`` (confidence
    1.0, no decay, never evicted), ``unpin``, ``forget`` (retracted, history kept),
    ``resolve`` (keep it, supersede the other side of its conflict), ``done`` (an open item).
    A change already made (done again, pinned again, unpinned when not pinned, forgotten
    again) changes nothing and is no error. Raises NotFound for an unknown id, InvalidInput
    for an unknown action or a change the item's state forbids."""
    if action not in CHANGES:
        raise InvalidInput(f"unknown change {action!r}; use one of {', '.join(CHANGES)}")
    now = app.now()
    if action in ("done", "pin", "unpin", "forget"):
        item = items.get_item(app.conn, app.profile, item_id)
        already = {
            "done": item.status == "done",
            "pin": item.pinned and item.status == "active",
            "unpin": not item.pinned and item.status == "active",
            "forget": item.status == "retracted",
        }[action]
        if already:
            return Change(item=item, already=True)
    return Change(item=curation.CHANGES[action](app.conn, app.profile, item_id, now), already=False)


def conflicts(app: App) -> list[tuple[MemoryItem, MemoryItem]]:
    """Pairs of confident facts flagged as contradicting, ``(newer, older)``, awaiting the
    person's `change` ``resolve``."""
    return curation.conflicts(app.conn, app.profile)


def is_overdue(item: MemoryItem, now: datetime) -> bool:
    """True for an active open item whose due time is before ``now`` (the one due-date
    rule)."""
    return item.status == "active" and due_rule.is_overdue(item.due_at, now)
