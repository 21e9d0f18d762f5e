"""The memory write path (Rheo article §05; Solid# article): create, reinforce, supersede, flag,
evict.

Every writer — Claude's ``write_memory`` tool, the background extractor, digests, the person's
own ``rheo memory add`` — goes through `remember`, so the rules hold whoever writes:

- the profile comes from the source turn, never from the writer's words (ownership);
- the same fact again reinforces: confidence +0.1 (max 1.0), count +1, decay restarts, and the
  new wording is kept in the reinforcement's event; "the same" is decided by the strict rule
  of `equivalence.equivalent` (a difference in order, roles, numbers, names, negation... is
  a change, and so is anything it cannot tell);
- a different fact on the same topic (or on the item a writer names with ``relation="update"``
  or a ``"same"`` the rule doubts) supersedes the old one, which keeps ``superseded_by``;
  when both are confident (>= 0.8; the old one after decay) the pair is flagged for review;
- an open item the writer says is fulfilled or cancelled (``relation="done"``), or one a
  same-topic statement closes in words ("sent", "cancelled"...), is marked done: not a
  conflict, still listed with ``items list --all``;
- a pinned fact is replaced only by a confident one (>= 0.8), whoever writes;
- past the cap, the least-reinforced unpinned item is evicted (status, not deletion); the cap
  counts per profile and assistant, shared facts being a bucket of their own;
- a fact is shared (``assistant`` None) or specific to the assistant its source turn was with
  (see `scope`); "same" and "changed" are decided within one scope: an assistant's fact on a
  topic shadows the shared one for that assistant, never supersedes it, and one that merely
  repeats a shared fact reinforces the shared one;
- a fact the person retracted is not learned again from conversation;
- every change is an event with its time and cause.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal

from ..store.db import write
from ..store.errors import InvalidInput, NotFound
from ..store.settings import Settings
from ..store.timeutil import to_stored
from ..text.secrets import mask, mask_value
from . import events
from .equivalence import closes, content_key, equivalent, similar, topic_key
from .items import CATEGORIES, MemoryItem, get_item, list_items, row_to_item
from .scope import assistant_of_turn, check_assistant

SOURCES = ("tool", "extractor", "digest", "manual", "import", "mcp", "request")
"""Who writes: ``request`` is rheo honouring the person's explicit "remember that ..."."""
PERSON = ("manual", "request")
"""Sources that are the person's own act: a retracted fact may be stated again."""
LABEL_MAX = 500


@dataclass(frozen=True)
class Fact:
    """A candidate memory item from any writer (already validated for shape).

    ``confidence`` None means the default (settings.initial_confidence); ``due_at`` is stored
    UTC text for open items with a deadline.
    """

    category: str
    topic: str
    label: str
    properties: dict[str, Any] = field(default_factory=dict)
    confidence: float | None = None
    reason: str = ""
    pinned: bool = False
    due_at: str | None = None


Action = Literal["created", "reinforced", "superseded", "done", "skipped"]
Relation = Literal["same", "update", "done", "new"]
RELATIONS = ("same", "update", "done", "new")
"""What a writer (the extractor) says a fact is relative to a known item it names: a repeat,
a change that replaces it, the end of an open item, or something new."""


@dataclass(frozen=True)
class Outcome:
    """What `remember` did. ``item`` is the item now holding the fact (None when skipped);
    ``previous`` the item it superseded; ``conflict`` whether the pair was flagged;
    ``evicted`` ids evicted by the cap; ``note`` a reason for a skip."""

    action: Action
    item: MemoryItem | None
    previous: MemoryItem | None = None
    conflict: bool = False
    evicted: tuple[int, ...] = ()
    note: str = ""

    def describe(self) -> str:
        """A short sentence for tool results and logs."""
        if self.item is None or self.action == "skipped":
            return f"not stored: {self.note}"
        extra = f" ({self.note})" if self.note else ""
        if self.action == "reinforced":
            return (
                f"reinforced memory #{self.item.id} (now {self.item.confidence:.2f}, "
                f"{self.item.reinforcements} mentions){extra}"
            )
        if self.action == "done":
            return f"marked open item #{self.item.id} done{extra}"
        if self.action == "superseded" and self.previous is not None:
            flag = "; both were confident, flagged for review" if self.conflict else ""
            return f"stored memory #{self.item.id}, superseding #{self.previous.id}{flag}{extra}"
        return f"stored memory #{self.item.id}{extra}"


def owner_of_turn(conn: sqlite3.Connection, turn_id: int) -> str:
    """The profile of ledger turn ``turn_id``; raises NotFound."""
    row = conn.execute("SELECT profile FROM turns WHERE id = ?", (turn_id,)).fetchone()
    if row is None:
        raise NotFound(f"no turn #{turn_id}")
    return str(row[0])


def check_fact(fact: Fact) -> Fact:
    """Normalise and validate a fact: known category, non-empty label, a topic (derived from
    the label when empty), confidence in [0, 1], JSON-serialisable properties.
    Raises InvalidInput."""
    if fact.category not in CATEGORIES:
        raise InvalidInput(
            f"unknown category {fact.category!r}; use one of {', '.join(CATEGORIES)}"
        )
    # A secret the person pasted (a key, a password) is never copied into memory.
    label = " ".join(mask(fact.label).split())
    if not label:
        raise InvalidInput("a memory needs some content")
    if len(label) > LABEL_MAX:
        raise InvalidInput(f"a memory label is at most {LABEL_MAX} characters")
    topic = topic_key(mask(fact.topic)) or topic_key(label)
    if not topic:
        raise InvalidInput("a memory topic needs at least one letter or digit")
    if fact.confidence is not None and not 0.0 <= fact.confidence <= 1.0:
        raise InvalidInput("confidence must be between 0 and 1")
    try:
        json.dumps(fact.properties, ensure_ascii=False)
    except (TypeError, ValueError):
        raise InvalidInput("memory properties must be JSON values") from None
    return Fact(
        category=fact.category,
        topic=topic,
        label=label,
        properties=dict(mask_value(dict(fact.properties))),  # type: ignore[call-overload]
        confidence=fact.confidence,
        reason=" ".join(mask(fact.reason).split())[:500],
        pinned=fact.pinned,
        due_at=fact.due_at,
    )


def remember(
    conn: sqlite3.Connection,
    fact: Fact,
    *,
    source: str,
    now: datetime,
    settings: Settings,
    source_turn_id: int | None = None,
    profile: str | None = None,
    relation: Relation | None = None,
    target_id: int | None = None,
    assistant: str | None = None,
) -> Outcome:
    """Write ``fact`` into memory and return what happened (see the module docstring).

    The profile is the source turn's when ``source_turn_id`` is given (a differing
    ``profile`` raises InvalidInput); otherwise ``profile`` is required (manual adds).
    ``target_id`` names a known item the writer relates the fact to, ``relation`` how (see
    `RELATIONS`); an id that is not an active item of the profile is ignored (with a note) and
    the fact is compared by topic, as is a fact without one. ``now`` (aware) dates the change.
    ``assistant`` makes the fact specific to that assistant (None: shared); with a source
    turn it must be the assistant that turn was with (else InvalidInput), so no writer can
    file a fact under another assistant. A ``target_id`` in the other scope: a change of a
    shared item by an assistant's fact takes its topic and shadows it; a repeat or a "done"
    acts on the shared item; a shared fact naming the turn's assistant's own item follows it.
    Raises InvalidInput for a malformed fact or relation, NotFound for an unknown source turn.
    """
    if source not in SOURCES:
        raise InvalidInput(f"unknown memory source {source!r}")
    if relation is not None and relation not in RELATIONS:
        raise InvalidInput(f"unknown relation {relation!r}; use one of {', '.join(RELATIONS)}")
    fact = check_fact(fact)
    ts = to_stored(now)
    with write(conn):
        if source_turn_id is not None:
            owner = owner_of_turn(conn, source_turn_id)
            if profile is not None and profile != owner:
                raise InvalidInput("a memory belongs to the profile of its source turn")
            profile = owner
        if profile is None:
            raise InvalidInput("a memory needs a source turn or a profile")
        own = assistant_of_turn(conn, source_turn_id) if source_turn_id is not None else None
        if assistant is not None:
            check_assistant(assistant)
            if source_turn_id is not None and assistant != own:
                raise InvalidInput(
                    "an assistant's memory belongs to the assistant of its source turn"
                )
        if source not in PERSON:
            # Whatever its topic now, a fact the person retracted is not learnt again.
            for row in conn.execute(
                "SELECT * FROM memory_items WHERE profile = ? AND status = 'retracted'",
                (profile,),
            ):
                old = row_to_item(row)
                if similar(old.label, old.properties, fact.label, fact.properties):
                    return Outcome("skipped", None, note=f"the person retracted #{old.id}")
        notes: list[str] = []
        target = _active(conn, profile, target_id) if target_id is not None else None
        if target_id is not None and target is None:
            notes.append(f"#{target_id} is not an active memory here; compared by topic")
        if target is not None and target.assistant != assistant:
            fact = replace(fact, topic=target.topic)
            if target.assistant is None and relation in ("same", "done"):
                assistant = None  # a repeat or the end of a shared fact acts on it
            elif target.assistant is not None and target.assistant == own:
                assistant = own  # a change of this assistant's own fact stays its own
            else:
                if target.assistant is None:
                    notes.append(f"shadows shared #{target.id} for {assistant}")
                else:
                    notes.append(f"#{target.id} belongs to another scope; compared by topic")
                target = None
        if target is not None:
            fact = replace(fact, topic=target.topic)
            active = [target]
        else:
            relation = None
            active = _on_topic(conn, profile, fact.topic, assistant)
        confidence = _confidence(fact, settings)
        guarded = [
            old
            for old in active
            if old.pinned
            and confidence < settings.conflict_threshold
            and not _refines(old, source, source_turn_id)
        ]
        if relation != "done":
            for old in active:
                if equivalent(old.label, old.properties, fact.label, fact.properties):
                    return _repeat(conn, old, fact, ts, source, source_turn_id, settings, notes)
            if not active:
                # The same fact under another topic name (the person's "remember that ..."
                # and the model's write_memory name topics differently): a repeat, not a copy.
                for old in _same_content(conn, profile, fact, assistant):
                    notes.append(f"the same fact as #{old.id} (topic {old.topic})")
                    return _repeat(conn, old, fact, ts, source, source_turn_id, settings, notes)
            if assistant is not None and not active:
                # An assistant's fact that only repeats the shared one: the shared one is
                # reinforced rather than shadowed by a copy.
                for old in _on_topic(conn, profile, fact.topic, None):
                    if equivalent(old.label, old.properties, fact.label, fact.properties):
                        notes.append(f"the same as shared #{old.id}")
                        return _repeat(conn, old, fact, ts, source, source_turn_id, settings, notes)
        if relation == "same":
            notes.append(f"said to repeat #{active[0].id} but differs in meaning: a change")
        if guarded:
            return Outcome(
                "skipped",
                None,
                note=(
                    f"pinned #{guarded[0].id} is kept: a pinned fact is replaced only by a "
                    f"confident one (>= {settings.conflict_threshold:.2f}; this one is "
                    f"{confidence:.2f})"
                ),
            )
        closing = [
            old
            for old in active
            if old.category == "open_item"
            and (relation == "done" or closes(old.content_text(), fact.label))
        ]
        if closing:
            item = _close(conn, closing[0], fact, ts, source, source_turn_id)
            return Outcome("done", item, note="; ".join(notes))
        item = _create(
            conn,
            profile,
            replace(
                fact,
                pinned=fact.pinned or any(_carries_pin(o, source, source_turn_id) for o in active),
            ),
            ts,
            source,
            source_turn_id,
            settings,
            assistant,
        )
        previous: MemoryItem | None = None
        conflict = False
        for old in active:
            # Compared at the two decimals rheo shows: minutes of decay don't undo a tie.
            old_conf = round(old.effective(now, settings), 2)
            flagged = (
                relation != "done"
                and not _refines(old, source, source_turn_id)
                and old_conf >= settings.conflict_threshold
                and round(item.confidence, 2) >= settings.conflict_threshold
            )
            _supersede(conn, old, item, ts, source_turn_id, flagged, old_conf)
            if previous is None:
                previous, conflict = old, flagged
        evicted = _enforce_cap(conn, profile, assistant, ts, settings, now, keep=item.id)
        item = get_item(conn, profile, item.id)
    return Outcome(
        "superseded" if previous else "created",
        item,
        previous=previous,
        conflict=conflict,
        evicted=tuple(evicted),
        note="; ".join(notes),
    )


def _repeat(
    conn: sqlite3.Connection,
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
    if source_turn_id is not None and _mentioned_in(conn, old.id, source_turn_id):
        return Outcome("skipped", old, note=f"turn #{source_turn_id} already counted")
    item = _reinforce(conn, old, fact, ts, source, source_turn_id, settings)
    return Outcome("reinforced", item, note="; ".join(notes))


def _same_content(
    conn: sqlite3.Connection, profile: str, fact: Fact, assistant: str | None
) -> list[MemoryItem]:
    """Active items of the scope whose content is the same fact as ``fact`` (by the strict
    rule, `equivalent`) whatever their topic, oldest first; candidates are found by the
    stored content key, so this is one indexed-by-profile read."""
    rows = conn.execute(
        "SELECT * FROM memory_items WHERE profile = ? AND status = 'active' AND content_key = ? "
        "AND coalesce(assistant, '') = coalesce(?, '') ORDER BY id",
        (profile, content_key(fact.label, fact.properties), assistant),
    ).fetchall()
    found = [row_to_item(r) for r in rows]
    return [o for o in found if equivalent(o.label, o.properties, fact.label, fact.properties)]


def _on_topic(
    conn: sqlite3.Connection, profile: str, topic: str, assistant: str | None
) -> list[MemoryItem]:
    """Active items of one scope (``assistant``; None: shared) on ``topic``, newest first."""
    return [
        row_to_item(r)
        for r in conn.execute(
            # coalesce, not `IS ?`: the same on SQLite and PostgreSQL (names are never empty)
            "SELECT * FROM memory_items WHERE profile = ? AND coalesce(assistant, '') = "
            "coalesce(?, '') AND topic = ? AND status = 'active' ORDER BY id DESC",
            (profile, assistant, topic),
        )
    ]


def _confidence(fact: Fact, settings: Settings) -> float:
    """The confidence a new item from ``fact`` would get (0.0 is a confidence, not "unset")."""
    if fact.pinned:
        return 1.0
    return settings.initial_confidence if fact.confidence is None else fact.confidence


def _refines(old: MemoryItem, source: str, source_turn_id: int | None) -> bool:
    """Whether a fact from ``source_turn_id`` restates ``old`` from the very same turn (the
    extractor refining what rheo stored for an explicit request): not a contradiction."""
    return (
        source != "manual" and source_turn_id is not None and old.source_turn_id == source_turn_id
    )


def _carries_pin(old: MemoryItem, source: str, source_turn_id: int | None) -> bool:
    return old.pinned and _refines(old, source, source_turn_id)


def _active(conn: sqlite3.Connection, profile: str, item_id: int) -> MemoryItem | None:
    """Item ``item_id`` when it is an active item of ``profile``, else None."""
    row = conn.execute(
        "SELECT * FROM memory_items WHERE id = ? AND profile = ? AND status = 'active'",
        (item_id, profile),
    ).fetchone()
    return None if row is None else row_to_item(row)


def _close(
    conn: sqlite3.Connection,
    item: MemoryItem,
    fact: Fact,
    ts: str,
    source: str,
    source_turn_id: int | None,
) -> MemoryItem:
    """Mark open item ``item`` done because of ``fact``, whose wording the event keeps."""
    conn.execute("UPDATE memory_items SET status = 'done' WHERE id = ?", (item.id,))
    wording = _wording(fact)
    events.append(
        conn,
        item_id=item.id,
        profile=item.profile,
        ts=ts,
        kind="done",
        cause=f'fulfilled or cancelled ({source}): "{wording}"',
        source_turn_id=source_turn_id,
        data={"wording": fact.label, "properties": fact.properties},
    )
    return get_item(conn, item.profile, item.id)


def _mentioned_in(conn: sqlite3.Connection, item_id: int, turn_id: int) -> bool:
    """Whether ``turn_id`` already created or reinforced item ``item_id``."""
    row = conn.execute(
        "SELECT 1 FROM memory_events WHERE item_id = ? AND source_turn_id = ? "
        "AND kind IN ('created', 'reinforced') LIMIT 1",
        (item_id, turn_id),
    ).fetchone()
    return row is not None


def writes_from_turn(conn: sqlite3.Connection, turn_id: int) -> int:
    """How many facts turn ``turn_id`` has created or reinforced so far."""
    row = conn.execute(
        "SELECT count(*) FROM memory_events WHERE source_turn_id = ? "
        "AND kind IN ('created', 'reinforced')",
        (turn_id,),
    ).fetchone()
    return int(row[0])


def _create(
    conn: sqlite3.Connection,
    profile: str,
    fact: Fact,
    ts: str,
    source: str,
    source_turn_id: int | None,
    settings: Settings,
    assistant: str | None = None,
) -> MemoryItem:
    confidence = (
        1.0
        if fact.pinned
        else (settings.initial_confidence if fact.confidence is None else fact.confidence)
    )
    cur = conn.execute(
        "INSERT INTO memory_items(profile, category, topic, label, properties, content_key, "
        "confidence, reinforcements, pinned, reason, source, source_turn_id, created_at, "
        "reinforced_at, status, due_at, assistant) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?, "
        "?, 'active', ?, ?)",
        (
            profile,
            fact.category,
            fact.topic,
            fact.label,
            json.dumps(fact.properties, ensure_ascii=False),
            content_key(fact.label, fact.properties),
            confidence,
            int(fact.pinned),
            fact.reason,
            source,
            source_turn_id,
            ts,
            ts,
            fact.due_at,
            assistant,
        ),
    )
    assert cur.lastrowid is not None
    events.append(
        conn,
        item_id=cur.lastrowid,
        profile=profile,
        ts=ts,
        kind="created",
        cause=f"{source}: {fact.reason}" if fact.reason else source,
        source_turn_id=source_turn_id,
        data={"confidence": confidence},
    )
    if fact.pinned:
        events.append(
            conn,
            item_id=cur.lastrowid,
            profile=profile,
            ts=ts,
            kind="pinned",
            cause="the person asked to always remember it",
            source_turn_id=source_turn_id,
        )
    return get_item(conn, profile, cur.lastrowid)


def _reinforce(
    conn: sqlite3.Connection,
    item: MemoryItem,
    fact: Fact,
    ts: str,
    source: str,
    source_turn_id: int | None,
    settings: Settings,
) -> MemoryItem:
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
        cause=f'mentioned again ({source}): "{_wording(fact)}"',
        source_turn_id=source_turn_id,
        data={
            "confidence": confidence,
            "before": item.confidence,
            "wording": fact.label,
            "properties": fact.properties,
        },
    )
    if fact.pinned and not item.pinned:
        events.append(
            conn,
            item_id=item.id,
            profile=item.profile,
            ts=ts,
            kind="pinned",
            cause="the person asked to always remember it",
            source_turn_id=source_turn_id,
        )
    return get_item(conn, item.profile, item.id)


def _wording(fact: Fact) -> str:
    if not fact.properties:
        return fact.label
    props = "; ".join(f"{k}: {v}" for k, v in fact.properties.items())
    return f"{fact.label} ({props})"


def _supersede(
    conn: sqlite3.Connection,
    old: MemoryItem,
    new: MemoryItem,
    ts: str,
    source_turn_id: int | None,
    flagged: bool,
    old_confidence: float,
) -> None:
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
        cause=f"replaced by #{new.id}: {new.content_text()}",
        related_item_id=new.id,
        source_turn_id=source_turn_id,
    )
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


def _enforce_cap(
    conn: sqlite3.Connection,
    profile: str,
    assistant: str | None,
    ts: str,
    settings: Settings,
    now: datetime,
    *,
    keep: int | None = None,
) -> list[int]:
    """Evict the least-reinforced unpinned facts beyond the cap (open items never count).
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
        )
    return [v.id for v in victims]
