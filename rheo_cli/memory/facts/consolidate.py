"""Consolidation: a small model reviews the profile's facts for duplicates and for facts a
later one made stale; rheo applies what it proposes through the rules of any change
(Solid# article: extraction is the only "AI" part of memory — and so is this review).

- `batches` picks what is worth a look: active facts (not open items) of one scope linked by
  a topic, a word few other facts use, or a field ("work" and "job"), in groups of at most
  `BATCH`. Facts linked to nothing are not sent.
- `read` takes the model's reply: ``{"actions": [{"action": "duplicate" | "stale", "keep":
  ID, "drop": [IDS], "reason": "..."}]}``. An empty or malformed reply raises
  `ReplyUnreadable` before anything is changed (the job fails visibly, `jobs.fail`).
- `apply` checks each proposal and applies it: a duplicate is superseded by the fact kept,
  which is reinforced with its wording (one item stays: "I have a dog Rex and a cat Tom" then
  "my dog is Rex" never becomes a third item, and the fuller one is the one kept); a stale
  fact is superseded by the later one, a conflict flagged as for any change when both are
  confident and the person did not say it changed. Nothing is deleted; every change is an
  event whose cause gives the model's reason.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from .. import jobs
from ..store.api import Connection
from ..store.db import write
from ..store.errors import EngineError
from ..store.settings import Settings
from ..store.timeutil import to_stored
from . import changes
from .equivalence import similar
from .fact import Fact
from .items import MemoryItem, get_item, list_items
from .keywords import numbers, related, roots
from .parsing import find_json
from .reinforce import mentioned_in, reinforce
from .supersede import supersede_all, supersede_one

BATCH = 30
"""At most this many facts go to the model in one request."""
BACKGROUND_NEW = 3
"""Facts written since the last review before a closed session queues another one in the
background (``rheo maintain`` reviews after any new fact)."""
Kind = Literal["duplicate", "stale"]
_KINDS: dict[str, Kind] = {
    "duplicate": "duplicate",
    "merge": "duplicate",
    "same": "duplicate",
    "stale": "stale",
    "supersede": "stale",
    "superseded": "stale",
    "update": "stale",
    "replace": "stale",
    "outdated": "stale",
}


class ReplyUnreadable(EngineError):
    """The reviewing model's reply was empty or not the expected JSON: nothing was changed."""


@dataclass(frozen=True)
class Proposal:
    """One change the model proposes: ``kind`` duplicate (``drop`` says the same as ``keep``)
    or stale (``keep``, said later, made ``drop`` stale), and its ``reason``."""

    kind: Kind
    keep: int
    drop: tuple[int, ...]
    reason: str


def batches(conn: Connection, profile: str, *, size: int = BATCH) -> list[list[MemoryItem]]:
    """Groups of ``profile``'s active facts worth reviewing together, oldest first within
    each: facts of one scope (shared, or one assistant's) linked by one topic, a meaningful
    word at most a quarter of them use (so the person's own name links nothing), or an
    everyday field (`keywords.related`). Facts linked to none are left out; a group larger
    than ``size`` is cut into consecutive batches (each of at least two)."""
    facts = [
        i
        for i in list_items(conn, profile, statuses=("active",), all_assistants=True)
        if i.category != "open_item"
    ]
    out: list[list[MemoryItem]] = []
    for scope in sorted({i.assistant or "" for i in facts}):
        group = sorted((i for i in facts if (i.assistant or "") == scope), key=lambda i: i.id)
        out += _linked(group, size)
    return out


def _linked(facts: list[MemoryItem], size: int) -> list[list[MemoryItem]]:
    words = {i.id: roots(i.label, i.properties) for i in facts}
    counts = Counter(w for ws in words.values() for w in ws)
    common = {w for w, n in counts.items() if n > max(2, len(facts) // 4)}
    parent = {i.id: i.id for i in facts}

    def top(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for n, a in enumerate(facts):
        mine = words[a.id] - common
        for b in facts[n + 1 :]:
            theirs = words[b.id] - common
            if a.topic == b.topic or mine & theirs or related(mine) & theirs:
                parent[top(a.id)] = top(b.id)
    groups: dict[int, list[MemoryItem]] = {}
    for item in facts:
        groups.setdefault(top(item.id), []).append(item)
    out = []
    for group in groups.values():
        for start in range(0, len(group), size):
            chunk = group[start : start + size]
            if len(chunk) >= 2:
                out.append(chunk)
    return out


def prompt(batch: list[MemoryItem], now: datetime) -> str:
    """The reviewer's user message for ``batch``: one line per fact with its id, the day it
    was said (in ``now``'s zone), who wrote it and its topic."""
    lines = [f"Today: {now.strftime('%Y-%m-%d')}", "", "Facts:"]
    for i in batch:
        said = datetime.fromisoformat(i.created_at.replace("Z", "+00:00")).astimezone(now.tzinfo)
        text = " ".join(i.content_text().split())
        lines.append(f"#{i.id} [said {said:%Y-%m-%d}, {i.source}] {i.topic}: {text}")
    return "\n".join(lines)


def read(text: str, batch: list[MemoryItem]) -> tuple[list[Proposal], list[str]]:
    """The proposals in the model's reply ``text`` about ``batch``, and notes on what was
    dropped (unknown ids, an unknown action). Raises ReplyUnreadable for an empty reply or
    one without a list of actions: nothing is to be changed then."""
    notes: list[str] = []
    if not text.strip():
        raise ReplyUnreadable("the reviewer's reply was empty")
    try:
        value = find_json(text, notes)
    except ValueError as exc:
        raise ReplyUnreadable(f"the reviewer's reply could not be read: {exc}") from None
    raw: Any = value.get("actions") if isinstance(value, dict) else value
    if not isinstance(raw, list):
        raise ReplyUnreadable("the reviewer's reply has no list of actions")
    known = {i.id for i in batch}
    out: list[Proposal] = []
    for n, entry in enumerate(raw, 1):
        proposal = _proposal(entry, known, notes, n)
        if proposal is not None:
            out.append(proposal)
    return out, notes


def _proposal(entry: Any, known: set[int], notes: list[str], n: int) -> Proposal | None:
    if not isinstance(entry, dict):
        notes.append(f"action {n}: not an object; ignored")
        return None
    kind = _KINDS.get(str(entry.get("action") or entry.get("kind") or "").strip().lower())
    if kind is None:
        notes.append(f"action {n}: unknown action {str(entry.get('action'))[:30]!r}; ignored")
        return None
    try:
        keep = int(str(entry.get("keep")))
        raw_drop = entry.get("drop")
        drop = tuple(int(str(d)) for d in (raw_drop if isinstance(raw_drop, list) else [raw_drop]))
    except (TypeError, ValueError):
        notes.append(f"action {n}: keep and drop must be ids; ignored")
        return None
    drop = tuple(d for d in dict.fromkeys(drop) if d != keep)
    unknown = [i for i in (keep, *drop) if i not in known]
    if unknown or not drop:
        notes.append(f"action {n}: ids not in this batch ({unknown or 'none to drop'}); ignored")
        return None
    reason = " ".join(str(entry.get("reason") or "").split())[:200]
    return Proposal(kind, keep, drop, reason)


def apply(
    conn: Connection,
    profile: str,
    proposals: list[Proposal],
    *,
    now: datetime,
    settings: Settings,
) -> list[str]:
    """Apply ``proposals`` (see the module docstring) in one transaction and return one note
    per proposal: what was done, or why rheo refused it (a fact no longer active, in another
    scope, a "duplicate" that says something the kept fact does not, a "stale" fact said
    after the one said to replace it)."""
    ts = to_stored(now)
    notes: list[str] = []
    with write(conn):
        for p in proposals:
            for drop in p.drop:
                notes.append(_apply_one(conn, profile, p, drop, ts, now, settings))
    return notes


def _apply_one(
    conn: Connection,
    profile: str,
    p: Proposal,
    drop_id: int,
    ts: str,
    now: datetime,
    settings: Settings,
) -> str:
    keep, drop = get_item(conn, profile, p.keep), get_item(conn, profile, drop_id)
    why = f" ({p.reason})" if p.reason else ""
    if keep.status != "active" or drop.status != "active":
        return f"#{drop.id} / #{keep.id}: no longer both active; left as they are"
    if keep.assistant != drop.assistant:
        return f"#{drop.id} / #{keep.id}: different scopes; left as they are"
    if p.kind == "duplicate":
        if not says_all(keep, drop) and says_all(drop, keep):
            keep, drop = drop, keep  # keep the fuller wording: nothing it said is lost
        if not says_all(keep, drop):
            return f"#{drop.id} is not a duplicate of #{keep.id}: it says more; left as they are"
        supersede_one(conn, drop, keep, ts, None,
                      cause=f"consolidation: the same fact as #{keep.id}{why}")  # fmt: skip
        if drop.source_turn_id is None or not mentioned_in(conn, keep.id, drop.source_turn_id):
            fact = Fact(drop.category, keep.topic, drop.label, dict(drop.properties),
                        pinned=drop.pinned)  # fmt: skip
            reinforce(conn, keep, fact, ts, "consolidation", drop.source_turn_id, settings)
        elif drop.pinned and not keep.pinned:
            conn.execute("UPDATE memory_items SET pinned = 1 WHERE id = ?", (keep.id,))
        return f"merged #{drop.id} into #{keep.id}{why}"
    if drop.created_at > keep.created_at:
        return f"#{drop.id} was said after #{keep.id}: it stays current"
    if drop.topic != keep.topic and not (
        roots(drop.label, drop.properties) & related(roots(keep.label, keep.properties))
    ):
        return f"#{drop.id} and #{keep.id} share nothing: left as they are"
    fact = Fact(keep.category, keep.topic, keep.label, dict(keep.properties))
    announced = changes.stated(conn, fact, keep.source_turn_id, [drop])
    _, flagged = supersede_all(
        conn,
        [drop],
        keep,
        ts=ts,
        now=now,
        source="consolidation",
        source_turn_id=None,
        relation=None,
        settings=settings,
        announced=announced,
        why=f"consolidation{why}",
    )
    flag = "; both confident, flagged for review" if flagged else ""
    return f"#{drop.id} made stale by #{keep.id}{why}{flag}"


def says_all(keep: MemoryItem, drop: MemoryItem) -> bool:
    """Whether ``keep`` says everything ``drop`` does: similar wording, or every meaningful
    word and number of ``drop`` in ``keep``, neither negated alone."""
    if similar(keep.label, keep.properties, drop.label, drop.properties):
        return True
    if changes.states_change(drop.content_text()) != changes.states_change(keep.content_text()):
        return False
    return roots(drop.label, drop.properties) <= roots(keep.label, keep.properties) and numbers(
        drop.content_text()
    ) <= numbers(keep.content_text())


def enqueue(conn: Connection, profile: str, ts: str, *, min_new: int = 1) -> bool:
    """Queue a consolidation job for ``profile`` when it has facts worth reviewing together
    (`batches`) and at least ``min_new`` facts were written since the last review, unless a
    consolidation job of the profile has failed for good (it is not re-launched until
    ``rheo maintain --retry-failed``). True when a job was queued. The job's reference is
    the profile's latest memory event, so it is queued once per state of the memory."""
    if conn.execute(
        "SELECT 1 FROM jobs WHERE profile = ? AND kind = 'consolidate' AND status IN "
        "('failed', 'pending', 'running') LIMIT 1",
        (profile,),
    ).fetchone():
        return False
    last = conn.execute(
        "SELECT max(ref_id) FROM jobs WHERE profile = ? AND kind = 'consolidate'", (profile,)
    ).fetchone()[0]
    new = conn.execute(
        "SELECT count(*) FROM memory_events WHERE profile = ? AND kind = 'created' AND id > ?",
        (profile, last or 0),
    ).fetchone()[0]
    if int(new) < min_new or not batches(conn, profile):
        return False
    ref = conn.execute(
        "SELECT max(id) FROM memory_events WHERE profile = ?", (profile,)
    ).fetchone()[0]
    return ref is not None and jobs.enqueue(
        conn, profile=profile, kind="consolidate", ref_id=int(ref), ts=ts
    )
