"""What a purge takes back from the memory items it keeps (used by `purge`).

A purge of turns (one turn, a session) or of memory items erases what was learnt from them.
Precisely, with T the purged turns and I the erased items:

- I: the items whose source turn is in T, or the item purged by name (`purge.plan`) — with
  their whole history;
- the events of kept items that cite a turn of T (``source_turn_id``; a retraction from
  before schema 13 by the ``(turn #N)`` its cause ends with): a reinforcement ("mentioned
  again: '…'"), a pin asked for, an open item closed ("fulfilled or cancelled: '…'"), an item
  replaced or flagged against a fact of T, an eviction to make room for one — erased;
- the events of kept items about an item of I (``superseded``: "replaced by #B: <B's
  words>", ``conflict_flagged``) — erased, as they quote or describe it;
- what the digest of a session that loses a turn wrote without citing a turn (rheo files
  such a fact under the session's last person turn, so it may come from the purged one):
  its items join I, its reinforcements and closings of kept items are erased (`uncited`);
  the digest itself goes and is queued to be written again from the turns left;
- the extraction jobs (their notes quote what was read) of the purged turns and of the
  replies that answered a purged question (`readers`).

What those events did is undone on the items that stay, as if T had never been said:

- an item replaced by an item of I is replaced instead by the first kept item after it in the
  chain of replacements (A ← B ← C with B erased: A is replaced by C), or, when none is left,
  is active again;
- an open item closed by T is open again, an item evicted for a fact of T active again —
  when that is still its latest change of status;
- a conflict flag on an item of I is cleared;
- a reinforcement from T is taken back: one mention less, the stored confidence and the time
  of the last reinforcement replayed from the reinforcements that remain; a pin T asked for
  is taken back;
- a retraction T asked for ("forget that …") stands — the person's decision — but its event
  no longer quotes the request.

Each change is an event of its own (``reopened``, ``superseded``, ``resolved``,
``unpinned``) whose words name only ids and kept items, never erased text. Nothing is
undone for a whole profile (nothing stays). Every statement names the profile.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .facts import events
from .facts.items import row_to_item
from .store.api import Connection

STATUS_KINDS = ("superseded", "retracted", "evicted", "done", "reopened", "resolved")
"""Event kinds that may change an item's status."""

DEFAULT_STEP = 0.1
"""The reinforcement step assumed when an item's history shows none uncapped."""

RETRACTED_CAUSE = "retracted at the person's request (the turn that asked was purged)"
"""What a kept retraction says once the turn that asked for it is purged."""

_LEGACY_TURN = re.compile(r"\(turn #(\d+)\)$")


@dataclass(frozen=True)
class _Event:
    id: int
    item_id: int
    ts: str
    kind: str
    cause: str
    related_item_id: int | None
    source_turn_id: int | None
    data: dict[str, Any]


@dataclass
class Undo:
    """What `prepare` found to take back: events of kept items to erase and to reword, the
    kept items' new state (column -> value by item id) with the events explaining it, and
    counts of what was restored."""

    erased: list[int] = field(default_factory=list)
    reworded: list[int] = field(default_factory=list)
    updates: dict[int, dict[str, Any]] = field(default_factory=dict)
    notes: list[tuple[int, str, str, int | None]] = field(default_factory=list)
    """``(item id, kind, cause, related item id)`` events to append."""
    counts: dict[str, int] = field(default_factory=dict)

    def count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1


def _chunks(ids: Sequence[int], size: int = 500) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


_EVENT_COLUMNS = "id, item_id, ts, kind, cause, related_item_id, source_turn_id, data"


def _event(r: Any) -> _Event:
    try:
        data = json.loads(r["data"] or "{}")
    except ValueError:
        data = {}
    return _Event(
        int(r["id"]), int(r["item_id"]), r["ts"], r["kind"], r["cause"],
        r["related_item_id"], r["source_turn_id"], data if isinstance(data, dict) else {},
    )  # fmt: skip


def _events_where(conn: Connection, profile: str, column: str, ids: Sequence[int]) -> list[_Event]:
    out: list[_Event] = []
    for chunk in _chunks(sorted(set(ids))):
        marks = ",".join("?" * len(chunk))
        out += [
            _event(r)
            for r in conn.execute(
                f"SELECT {_EVENT_COLUMNS} FROM memory_events WHERE profile = ? "
                f"AND {column} IN ({marks})",
                (profile, *chunk),
            ).fetchall()
        ]
    return out


def _items_where(conn: Connection, profile: str, column: str, ids: Sequence[int]) -> list[int]:
    out: list[int] = []
    for chunk in _chunks(sorted(set(ids))):
        marks = ",".join("?" * len(chunk))
        out += [
            int(r[0])
            for r in conn.execute(
                f"SELECT id FROM memory_items WHERE profile = ? AND {column} IN ({marks})",
                (profile, *chunk),
            ).fetchall()
        ]
    return out


def _cites(event: _Event, turns: set[int]) -> bool:
    """Whether ``event`` was written because of a turn of ``turns``."""
    if event.source_turn_id is not None:
        return event.source_turn_id in turns
    found = _LEGACY_TURN.search(event.cause) if event.kind == "retracted" else None
    return found is not None and int(found.group(1)) in turns


def _label(value: Any) -> str:
    return " ".join(str(value or "").split())


def uncited(conn: Connection, profile: str, digests: Sequence[int]) -> tuple[list[int], list[int]]:
    """What the ``digests`` (of sessions that keep some turns) wrote without citing a turn:
    ``(items it created, events of other items it wrote: reinforcements, closings)``, found
    by the digest's own list of facts (those with no ``turn_id``) among the items and events
    of source ``digest`` filed under a turn of its session."""
    items: list[int] = []
    found: list[int] = []
    for digest_id in digests:
        row = conn.execute(
            "SELECT session_id, facts FROM digests WHERE id = ? AND profile = ?",
            (digest_id, profile),
        ).fetchone()
        try:
            facts = json.loads(row["facts"] or "[]") if row is not None else []
        except ValueError:
            facts = []
        labels = {
            _label(f.get("label"))
            for f in facts if isinstance(f, dict) and f.get("turn_id") is None
        }  # fmt: skip
        labels.discard("")
        if not labels:
            continue
        session = [
            int(r[0])
            for r in conn.execute(
                "SELECT id FROM turns WHERE session_id = ? AND profile = ?",
                (row["session_id"], profile),
            ).fetchall()
        ]
        for chunk in _chunks(session):
            marks = ",".join("?" * len(chunk))
            items += [
                int(r["id"])
                for r in conn.execute(
                    "SELECT id, label FROM memory_items WHERE profile = ? AND source = 'digest' "
                    f"AND source_turn_id IN ({marks})",
                    (profile, *chunk),
                ).fetchall()
                if _label(r["label"]) in labels
            ]
        found += [
            e.id
            for e in _events_where(conn, profile, "source_turn_id", session)
            if e.kind in ("reinforced", "done")
            and "(digest)" in e.cause
            and _label(e.data.get("wording")) in labels
        ]
    return sorted(set(items)), sorted(set(found))


def prepare(
    conn: Connection,
    *,
    profile: str,
    turns: Sequence[int],
    items: Sequence[int],
    events: Sequence[int] = (),
) -> Undo:
    """What to take back from the kept items of ``profile`` when ``turns`` and ``items`` are
    erased, with ``events`` (of kept items, learnt from ``turns`` without citing them: see
    `uncited`) — see the module docstring. Reads only; call inside the purge's
    transaction."""
    undo = Undo()
    gone_turns, gone_items, learnt = set(turns), set(items), set(events)
    found = {e.id: e for e in _events_where(conn, profile, "source_turn_id", turns)}
    found.update({e.id: e for e in _events_where(conn, profile, "id", events)})
    found.update({e.id: e for e in _events_where(conn, profile, "related_item_id", items)})
    if gone_turns:
        legacy = conn.execute(
            f"SELECT {_EVENT_COLUMNS} FROM memory_events WHERE profile = ? "
            "AND kind = 'retracted' AND source_turn_id IS NULL AND cause LIKE ?",
            (profile, "%(turn #%)"),
        ).fetchall()
        found.update({e.id: e for e in map(_event, legacy)})
    affected: set[int] = set()
    for event in found.values():
        if event.item_id in gone_items:
            continue  # erased with its item
        if event.id in learnt or _cites(event, gone_turns):
            if event.kind == "retracted":
                undo.reworded.append(event.id)
            else:
                undo.erased.append(event.id)
            affected.add(event.item_id)
        elif event.related_item_id in gone_items and event.kind in (
            "superseded",
            "conflict_flagged",
        ):
            undo.erased.append(event.id)
            affected.add(event.item_id)
    affected.update(_items_where(conn, profile, "superseded_by", items))
    affected.update(_items_where(conn, profile, "conflict_with", items))
    erased = set(undo.erased)
    for item_id in sorted(affected - gone_items):
        _take_back(conn, profile, item_id, gone_items, erased, undo)
    undo.erased.sort()
    undo.reworded.sort()
    return undo


def _successor(conn: Connection, profile: str, start: int, gone: set[int]) -> int | None:
    """The first item after ``start`` (an erased item) in its chain of replacements that is
    kept, or None when the chain ends among erased items."""
    seen: set[int] = set()
    current: int | None = start
    while current is not None and current in gone and current not in seen:
        seen.add(current)
        row = conn.execute(
            "SELECT superseded_by FROM memory_items WHERE id = ? AND profile = ?",
            (current, profile),
        ).fetchone()
        current = row[0] if row is not None else None
    return None if current is None or current in gone else int(current)


def _take_back(
    conn: Connection,
    profile: str,
    item_id: int,
    gone: set[int],
    erased: set[int],
    undo: Undo,
) -> None:
    """Fill ``undo`` with kept item ``item_id``'s state once ``erased`` events and the ``gone``
    items are taken away."""
    row = conn.execute(
        "SELECT * FROM memory_items WHERE id = ? AND profile = ?", (item_id, profile)
    ).fetchone()
    if row is None:
        return
    item = row_to_item(row)
    history = [
        _event(r)
        for r in conn.execute(
            f"SELECT {_EVENT_COLUMNS} FROM memory_events WHERE item_id = ? AND profile = ? "
            "ORDER BY id",
            (item_id, profile),
        ).fetchall()
    ]
    changes: dict[str, Any] = {}
    status = item.status

    def note(kind: str, cause: str, related: int | None = None) -> None:
        undo.notes.append((item_id, kind, cause, related))

    if item.superseded_by is not None and item.superseded_by in gone:
        after = _successor(conn, profile, item.superseded_by, gone)
        changes["superseded_by"] = after
        if after is not None:
            successor = row_to_item(
                conn.execute(
                    "SELECT * FROM memory_items WHERE id = ? AND profile = ?", (after, profile)
                ).fetchone()
            )
            note(
                "superseded",
                f"replaced by #{after}: {successor.content_text()} (the statement that "
                f"replaced it before was purged)",
                after,
            )
            undo.count("memory_items_relinked")
        elif status == "superseded":
            status = "active"
            note("reopened", "restored: the statement that replaced it was purged")
            undo.count("memory_items_restored")
    if item.conflict_with is not None and item.conflict_with in gone:
        changes["conflict_with"] = None
        note("resolved", "no longer flagged: the statement it conflicted with was purged")
    kept = [e for e in history if e.id not in erased]
    for event in history:
        if event.id not in erased or event.kind not in ("done", "evicted"):
            continue
        later = any(k.id > event.id and k.kind in STATUS_KINDS for k in kept)
        if later or status != event.kind:
            continue
        status = "active"
        if event.kind == "done":
            note("reopened", "open again: the statement that closed it was purged")
        else:
            note("reopened", "restored: it was evicted to make room for a purged fact")
        undo.count("memory_items_restored")
    if status != item.status:
        changes["status"] = status
    pins = [e for e in history if e.kind in ("pinned", "unpinned")]
    unpinned = item.pinned and bool(pins) and pins[-1].id in erased and pins[-1].kind == "pinned"
    if unpinned:
        changes["pinned"] = 0
        note("unpinned", "unpinned: the request to always remember it was purged")
    removed = [e for e in history if e.id in erased and e.kind == "reinforced"]
    if removed:
        confidence, reinforced_at = _replayed(item.confidence, item.created_at, history, erased)
        changes["reinforcements"] = max(1, item.reinforcements - len(removed))
        changes["reinforced_at"] = reinforced_at
        if not item.pinned or unpinned:
            changes["confidence"] = confidence
        undo.counts["reinforcements_taken_back"] = undo.counts.get(
            "reinforcements_taken_back", 0
        ) + len(removed)
    if changes:
        undo.updates[item_id] = changes


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _replayed(
    stored: float, created_at: str, history: list[_Event], erased: set[int]
) -> tuple[float, str]:
    """The stored confidence and last reinforcement time of an item whose ``erased``
    reinforcements never happened: from its creation's confidence, each reinforcement that
    stays adds what it added then (one capped at 1.0 adds a full step, as it would have
    without the ones taken away). Without a recorded creation confidence, the taken-away
    steps are subtracted from ``stored``."""
    reinforcements = [e for e in history if e.kind == "reinforced"]
    steps: list[float] = []
    for e in reinforcements:
        before, after = _number(e.data.get("before")), _number(e.data.get("confidence"))
        if before is not None and after is not None and after - before > 0 and after < 1.0:
            steps.append(after - before)
    step = max(steps) if steps else DEFAULT_STEP
    created = next((e for e in history if e.kind == "created"), None)
    start = _number(created.data.get("confidence")) if created is not None else None
    last = created.ts if created is not None else created_at
    if start is None:
        taken = 0.0
        for e in reinforcements:
            before, after = _number(e.data.get("before")), _number(e.data.get("confidence"))
            if e.id in erased and before is not None and after is not None:
                taken += max(0.0, after - before)
        value = stored - taken
    else:
        value = start
        for e in reinforcements:
            if e.id in erased:
                continue
            before, after = _number(e.data.get("before")), _number(e.data.get("confidence"))
            added = after - before if before is not None and after is not None else step
            if after is not None and after >= 1.0:
                added = max(added, step)
            value = min(1.0, value + max(0.0, added))
    for e in reinforcements:
        if e.id not in erased and e.ts > last:
            last = e.ts
    return round(min(1.0, max(0.0, value)), 6), last


_UPDATABLE = ("status", "superseded_by", "conflict_with", "pinned", "confidence",
              "reinforcements", "reinforced_at")  # fmt: skip


def apply(conn: Connection, undo: Undo, *, profile: str, ts: str) -> dict[str, int]:
    """Carry out ``undo`` inside the purge's transaction (``ts``: stored UTC time of the new
    events); returns counts: memory events erased and items restored, relinked, their
    reinforcements taken back."""
    for chunk in _chunks(undo.erased):
        marks = ",".join("?" * len(chunk))
        conn.execute(
            f"DELETE FROM memory_events WHERE profile = ? AND id IN ({marks})", (profile, *chunk)
        )
    for event_id in undo.reworded:
        conn.execute(
            "UPDATE memory_events SET cause = ?, source_turn_id = NULL, data = '{}' "
            "WHERE id = ? AND profile = ?",
            (RETRACTED_CAUSE, event_id, profile),
        )
    for item_id, changes in sorted(undo.updates.items()):
        columns = [c for c in _UPDATABLE if c in changes]
        conn.execute(
            f"UPDATE memory_items SET {', '.join(f'{c} = ?' for c in columns)} "
            "WHERE id = ? AND profile = ?",
            (*(changes[c] for c in columns), item_id, profile),
        )
    for item_id, kind, cause, related in undo.notes:
        events.append(
            conn, item_id=item_id, profile=profile, ts=ts, kind=kind, cause=cause,
            related_item_id=related,
        )  # fmt: skip
    counts = dict(undo.counts)
    if undo.erased:
        counts["memory_events"] = len(undo.erased)
    return counts


def readers(
    conn: Connection, profile: str, sessions: Sequence[int], turns: Sequence[int]
) -> list[int]:
    """The kept replies in ``sessions`` whose extraction read a purged question of ``turns``:
    those naming it (``meta.reply_to``), and those without a name whose nearest question
    among the four turns before them is it (as extraction pairs them)."""
    gone = set(turns)
    out: list[int] = []
    for session_id in sessions:
        rows = conn.execute(
            "SELECT id, role, meta FROM turns WHERE session_id = ? AND profile = ? ORDER BY id",
            (session_id, profile),
        ).fetchall()
        for n, r in enumerate(rows):
            if r["role"] != "assistant" or r["id"] in gone:
                continue
            try:
                meta = json.loads(r["meta"] or "{}")
            except ValueError:
                meta = {}
            question = meta.get("reply_to") if isinstance(meta, dict) else None
            if not isinstance(question, int) or isinstance(question, bool):
                before = [b for b in rows[max(0, n - 4) : n] if b["role"] == "user"]
                question = int(before[-1]["id"]) if before else None
            if question in gone:
                out.append(int(r["id"]))
    return out
