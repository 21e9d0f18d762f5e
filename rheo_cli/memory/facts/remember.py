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

The parts live beside it: `fact` (the candidate and the outcome), `candidates` (what a fact is
compared with), `reinforce`, `supersede` (changes, conflicts, pins, done) and `cap`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import datetime

from .. import windows
from ..store.api import Connection
from ..store.db import write
from ..store.errors import InvalidInput
from ..store.settings import Settings
from ..store.timeutil import display, to_stored
from . import changes, events
from .candidates import active_item, on_topic, owner_of_turn, retracted_like
from .cap import enforce_cap
from .equivalence import content_key
from .fact import PERSON, RELATIONS, SOURCES, Fact, Outcome, Relation, check_fact
from .items import MemoryItem, get_item
from .keywords import clauses, own_words, roots
from .reinforce import repeat, same_as
from .scope import assistant_of_turn, check_assistant
from .supersede import carries_pin, close, closing, pin_guard, supersede_all, supersede_one

__all__ = ["RELATIONS", "Fact", "Outcome", "Relation", "check_fact", "remember"]
"""The write path and its vocabulary: `remember` takes a `Fact` and returns an `Outcome`."""


def remember(
    conn: Connection,
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
    fact = _checked(fact, source, relation)
    ts = to_stored(now)
    with write(conn):
        profile, own = _owner(conn, source_turn_id, profile, assistant)
        if source not in PERSON:
            # Whatever its topic now, a fact the person retracted is not learnt again.
            retracted = retracted_like(conn, profile, fact)
            if retracted is not None:
                return Outcome("skipped", None, note=f"the person retracted #{retracted.id}")
        notes: list[str] = []
        target, fact, assistant = _target(
            conn, profile, fact, target_id, relation, assistant, own, notes
        )
        fact = _windowed(conn, fact, now, source_turn_id)
        if target is not None:
            active = [target]
        else:
            relation = None
            active = on_topic(conn, profile, fact.topic, assistant)
        refiled: MemoryItem | None = None
        if relation != "done":
            same = same_as(conn, profile, fact, active, assistant, notes)
            if same is not None:
                why = _refiling(same, fact, assistant)
                if why is None:
                    return repeat(conn, same, fact, ts, source, source_turn_id, settings, notes)
                notes.append(f"#{same.id} said again {why}: replaced")
                refiled = same
                active = [same, *(a for a in active if a.id != same.id)]
        if relation == "same":
            notes.append(f"said to repeat #{active[0].id} but differs in meaning: a change")
        # Of several facts on the topic, only those this one is about change.
        replaced = active if target is not None else changes.changed_by(active, fact)
        if len(replaced) < len(active):
            kept = [f"#{a.id}" for a in active if a not in replaced]
            notes.append(f"{', '.join(kept)} on the same topic left as they are")
        guard = pin_guard(replaced, _confidence(fact, settings), source, source_turn_id, settings)
        if guard is not None:
            return Outcome("skipped", None, note=guard)
        done = closing(active, fact, relation)
        if done is not None:
            item = close(conn, done, fact, ts, source, source_turn_id)
            return Outcome("done", item, note="; ".join(notes))
        later = changes.said_later(replaced, ts)
        if later is not None:
            return _said_before(
                conn, profile, fact, later, ts, source, source_turn_id, settings, assistant, notes
            )
        return _write_change(
            conn, profile, fact, replaced, refiled, ts=ts, now=now, source=source,
            source_turn_id=source_turn_id, relation=relation, settings=settings,
            assistant=assistant, notes=notes,
        )  # fmt: skip


def _checked(fact: Fact, source: str, relation: Relation | None) -> Fact:
    """``fact`` checked (`check_fact`); raises InvalidInput for an unknown source or
    relation."""
    if source not in SOURCES:
        raise InvalidInput(f"unknown memory source {source!r}")
    if relation is not None and relation not in RELATIONS:
        raise InvalidInput(f"unknown relation {relation!r}; use one of {', '.join(RELATIONS)}")
    return check_fact(fact)


def _write_change(
    conn: Connection,
    profile: str,
    fact: Fact,
    replaced: list[MemoryItem],
    refiled: MemoryItem | None,
    *,
    ts: str,
    now: datetime,
    source: str,
    source_turn_id: int | None,
    relation: Relation | None,
    settings: Settings,
    assistant: str | None,
    notes: list[str],
) -> Outcome:
    """The new item for ``fact``, superseding ``replaced`` (flagged as a conflict unless the
    person stated the change: `changes.stated`), then the cap enforced; inside the caller's
    transaction."""
    announced = bool(replaced) and changes.stated(conn, fact, source_turn_id, replaced)
    pinned = (
        fact.pinned
        or carries_pin(replaced, source, source_turn_id)
        or (announced and any(old.pinned for old in replaced))
    )
    item = _create(
        conn,
        profile,
        replace(fact, pinned=pinned),
        ts,
        source,
        source_turn_id,
        settings,
        assistant,
    )
    previous, conflict = supersede_all(
        conn,
        replaced,
        item,
        ts=ts,
        now=now,
        source=source,
        source_turn_id=source_turn_id,
        relation=relation,
        settings=settings,
        restated=refiled,
        announced=announced,
    )
    if announced and previous is not None:
        notes.append("a change the person stated: applied")
    evicted = enforce_cap(
        conn, profile, assistant, ts, settings, now, keep=item.id,
        source_turn_id=source_turn_id,
    )  # fmt: skip
    item = get_item(conn, profile, item.id)
    return Outcome(
        "superseded" if previous else "created",
        item,
        previous=previous,
        conflict=conflict,
        evicted=tuple(evicted),
        note="; ".join(notes),
    )


def _owner(
    conn: Connection,
    source_turn_id: int | None,
    profile: str | None,
    assistant: str | None,
) -> tuple[str, str | None]:
    """Whose the fact is: the profile (the source turn's, never the writer's word) and the
    assistant the source turn was with (None: rheo itself, or no turn). Raises InvalidInput
    when the writer claims another profile or assistant, NotFound for an unknown turn."""
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
            raise InvalidInput("an assistant's memory belongs to the assistant of its source turn")
    return profile, own


def _target(
    conn: Connection,
    profile: str,
    fact: Fact,
    target_id: int | None,
    relation: Relation | None,
    assistant: str | None,
    own: str | None,
    notes: list[str],
) -> tuple[MemoryItem | None, Fact, str | None]:
    """The item a writer named (``target_id``) when ``fact`` is to be compared with it (None:
    compare by topic), ``fact`` under the topic it is filed under, and the scope it is
    written in (see `remember` on targets in the other scope). A named item that is not
    compared with is explained in ``notes``."""
    target = active_item(conn, profile, target_id) if target_id is not None else None
    if target is None:
        if target_id is not None:
            notes.append(f"#{target_id} is not an active memory here; compared by topic")
        return None, fact, assistant
    fact = replace(fact, topic=target.topic)
    if target.assistant == assistant:
        return target, fact, assistant
    if target.assistant is None and relation in ("same", "done"):
        return target, fact, None  # a repeat or the end of a shared fact acts on it
    if target.assistant is not None and target.assistant == own:
        return target, fact, own  # a change of this assistant's own fact stays its own
    if target.assistant is None:
        notes.append(f"shadows shared #{target.id} for {assistant}")  # under its topic
    else:
        notes.append(f"#{target.id} belongs to another scope; compared by topic")
    return None, fact, assistant


def _refiling(old: MemoryItem, fact: Fact, assistant: str | None) -> str | None:
    """Why ``fact``, the same words as ``old``, is still a change (None: a plain repeat): it
    makes a fact an open item, gives an open item another due date, or gives a fact another
    validity window ("until Friday" said again a week later). Only within one scope (an
    assistant's repeat of a shared fact stays a repeat)."""
    if old.assistant != assistant:
        return None
    window = (fact.valid_from, fact.valid_until)
    if fact.category != "open_item" and any(window) and window != (old.valid_from, old.valid_until):
        return "with another validity window"
    if fact.category != "open_item":
        return None
    if old.category != "open_item":
        return "as an open item"
    if fact.due_at is not None and fact.due_at != old.due_at:
        return "with another due date"
    return None


def _windowed(conn: Connection, fact: Fact, now: datetime, source_turn_id: int | None) -> Fact:
    """``fact`` with the validity window its words give it (`windows.infer`) when its writer
    gave none: from its own words, else from the clause of the person's turn it came from
    (one that shares a word with it), read at ``now`` in the person's zone. An open item's
    window end becomes its due date when it has none (an open item is followed up, not
    dropped, when its time passes)."""
    if fact.valid_from is not None or fact.valid_until is not None:
        window = None
    else:
        window = windows.infer(fact.wording(), now) or _window_in_turn(
            conn, fact, now, source_turn_id
        )
    if fact.category == "open_item":
        end = window.end if window is not None else None
        if fact.due_at is None and end is not None:
            return replace(fact, due_at=to_stored(end))
        return fact
    if window is None:
        return fact
    valid_from, valid_until = window.stored()
    return replace(fact, valid_from=valid_from, valid_until=valid_until)


def _window_in_turn(
    conn: Connection, fact: Fact, now: datetime, source_turn_id: int | None
) -> windows.Window | None:
    """The window a clause of the person's turn ``source_turn_id`` gives ``fact`` (the
    first clause sharing a word with it that names one), or None."""
    if source_turn_id is None:
        return None
    row = conn.execute("SELECT role, content FROM turns WHERE id = ?", (source_turn_id,)).fetchone()
    if row is None or row[0] != "user":
        return None
    about = roots(fact.label, fact.properties)
    for clause in clauses(own_words(row[1])):
        if roots(clause) & about:
            window = windows.infer(clause, now)
            if window is not None:
                return window
    return None


def _said_before(
    conn: Connection,
    profile: str,
    fact: Fact,
    later: MemoryItem,
    ts: str,
    source: str,
    source_turn_id: int | None,
    settings: Settings,
    assistant: str | None,
    notes: list[str],
) -> Outcome:
    """``fact`` was said (at ``ts``) before ``later``, the value that holds now: keep it in
    the history, already superseded by ``later`` (a retried job running late never brings an
    old value back)."""
    item = _create(conn, profile, replace(fact, pinned=False), ts, source, source_turn_id, settings,
                   assistant)  # fmt: skip
    supersede_one(
        conn,
        item,
        later,
        ts,
        source_turn_id,
        cause=f"said before #{later.id} ({display(later.created_at, None, with_time=False)}), "
        f"which stays current: "
        f"{later.content_text()}",
    )
    notes.append(f"said before #{later.id}, which stays current")
    return Outcome("created", get_item(conn, profile, item.id), note="; ".join(notes))


def create_item(
    conn: Connection,
    profile: str,
    fact: Fact,
    *,
    source: str,
    now: datetime,
    source_turn_id: int | None = None,
    assistant: str | None = None,
) -> MemoryItem:
    """Insert ``fact`` (already checked) as a new active item of ``profile``, compared with
    nothing — no reinforcement, no supersession, no cap: for a record that must leave every
    other fact as it is (a request to forget something not stored yet, `forgetting`). Its
    confidence is the fact's (else the default)."""
    with write(conn):
        return _create(conn, profile, fact, to_stored(now), source, source_turn_id, Settings(),
                       assistant)  # fmt: skip


def _confidence(fact: Fact, settings: Settings) -> float:
    """The confidence a new item from ``fact`` gets (0.0 is a confidence, not "unset")."""
    if fact.pinned:
        return 1.0
    return settings.initial_confidence if fact.confidence is None else fact.confidence


def _create(
    conn: Connection,
    profile: str,
    fact: Fact,
    ts: str,
    source: str,
    source_turn_id: int | None,
    settings: Settings,
    assistant: str | None = None,
) -> MemoryItem:
    """Insert ``fact`` as a new active item of ``profile`` and ``assistant`` with its
    ``created`` event (and ``pinned`` when it is pinned); returns the item."""
    confidence = _confidence(fact, settings)
    cur = conn.store.execute_indexed(
        "memory_items",
        "INSERT INTO memory_items(profile, category, topic, label, properties, content_key, "
        "confidence, reinforcements, pinned, reason, source, source_turn_id, created_at, "
        "reinforced_at, status, due_at, assistant, valid_from, valid_until) VALUES (?, ?, ?, ?, ?, "
        "?, ?, 1, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?)",
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
            fact.valid_from,
            fact.valid_until,
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
        events.pinned_on_request(
            conn, item_id=cur.lastrowid, profile=profile, ts=ts, source_turn_id=source_turn_id
        )
    return get_item(conn, profile, cur.lastrowid)
