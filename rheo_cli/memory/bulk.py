"""The bulk write path: importing many turns, facts and digests in few transactions.

For replaying history (an import, a benchmark's synthetic years of use): the same rows and the
same rules as the one-at-a-time path — sessions split on the gap, the ledger append-only, FTS
kept in sync by the same triggers — with one ``executemany`` per batch instead of one
transaction per row.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .facts.equivalence import content_key, topic_key
from .facts.items import CATEGORIES
from .ledger.sessions import session_near
from .store.api import Connection
from .store.db import write
from .store.errors import InvalidInput
from .store.timeutil import from_stored, to_stored

BATCH = 20_000
"""Rows per transaction: large enough to amortise commits, small enough to let readers in."""


@dataclass(frozen=True)
class TurnIn:
    """A turn to import: role, text, time (aware), and for replies model/status/usage.

    ``source_key`` names the message in the tool it came from (unique per profile, see
    migration m007); ``new_session`` opens a session at this turn whatever the gap (a new
    conversation in that tool)."""

    role: str
    content: str
    when: datetime
    model: str | None = None
    status: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    source_key: str | None = None
    new_session: bool = False


@dataclass
class Imported:
    """What an import wrote: counts and the id range of the new turns."""

    turns: int = 0
    sessions: int = 0
    first_id: int | None = None
    last_id: int | None = None


def _batches(rows: Iterable[TurnIn]) -> Iterator[list[TurnIn]]:
    batch: list[TurnIn] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def import_turns(
    conn: Connection, profile: str, rows: Iterable[TurnIn], *, gap_s: float
) -> Imported:
    """Append ``rows`` (in time order) to the profile's ledger, splitting sessions on the gap
    exactly as single appends would. Raises InvalidInput for a bad role/status (the batch it
    is in is not written)."""
    done = Imported()
    with conn.store.bulk_load():  # e.g. a larger page cache while importing
        _import_batches(conn, profile, rows, gap_s, done)
    return done


def _import_batches(
    conn: Connection, profile: str, rows: Iterable[TurnIn], gap_s: float, done: Imported
) -> None:
    for batch in _batches(rows):
        # The batch's search entries are written once at its end where the store indexes
        # by triggers (`api.Store.deferred_indexing`).
        with write(conn), conn.store.deferred_indexing("turns"):
            # The session the batch's first row would continue, in time (imported included:
            # a later export continues its own conversations).
            current = session_near(conn, profile, to_stored(batch[0].when), imported=True)
            session_id = current.id if current else None
            started = current.started_at if current else ""
            last = current.last_turn_at if current else ""
            # The session rule of `sessions.within_gap`, on datetimes kept across rows.
            first_dt = from_stored(started) if current else None
            last_dt = from_stored(last) if current else None
            counts: dict[int, list[Any]] = {}
            values = []
            for row in batch:
                if row.role not in ("user", "assistant"):
                    raise InvalidInput(f"role must be user or assistant, not {row.role!r}")
                status = row.status if row.role == "assistant" else None
                if row.role == "assistant" and status not in ("ok", "interrupted", "error"):
                    status = "ok"
                ts = to_stored(row.when)
                joins = (
                    first_dt is not None
                    and last_dt is not None
                    and (row.when - last_dt).total_seconds() <= gap_s
                    and (first_dt - row.when).total_seconds() <= gap_s
                )
                if session_id is None or not joins or row.new_session:
                    cur = conn.execute(
                        "INSERT INTO sessions(profile, started_at, last_turn_at, turns) "
                        "VALUES (?, ?, ?, 0)",
                        (profile, ts, ts),
                    )
                    session_id = cur.lastrowid
                    assert session_id is not None
                    started, last = ts, ts
                    first_dt = last_dt = row.when
                    done.sessions += 1
                if row.when < first_dt:  # type: ignore[operator]
                    first_dt, started = row.when, ts
                if row.when > last_dt:  # type: ignore[operator]
                    last_dt, last = row.when, ts
                entry = counts.setdefault(session_id, [started, last, 0])
                entry[0], entry[1], entry[2] = started, last, entry[2] + 1
                values.append(
                    (
                        profile,
                        session_id,
                        row.role,
                        row.content,
                        ts,
                        row.model,
                        status,
                        json.dumps(row.meta, ensure_ascii=False) if row.meta else "{}",
                        row.source_key,
                    )
                )
            conn.executemany(
                "INSERT INTO turns(profile, session_id, role, content, ts, model, status, meta, "
                "source_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )
            # The earlier and the later of two times, in the SQL both stores run.
            conn.executemany(
                "UPDATE sessions SET "
                "started_at = CASE WHEN ? < started_at THEN ? ELSE started_at END, "
                "last_turn_at = CASE WHEN ? > last_turn_at THEN ? ELSE last_turn_at END, "
                "turns = turns + ? WHERE id = ?",
                [(s, s, e, e, n, sid) for sid, (s, e, n) in counts.items()],
            )
            last_id = conn.execute(  # never another profile's (a server's store: even unbound)
                "SELECT max(id) FROM turns WHERE profile = ?", (profile,)
            ).fetchone()[0]
        done.turns += len(batch)
        done.last_id = last_id
        if done.first_id is None:
            done.first_id = last_id - len(batch) + 1


@dataclass(frozen=True)
class ItemIn:
    """A memory item to import with its final state and history (already decided)."""

    category: str
    topic: str
    label: str
    when: datetime
    source_turn_id: int | None
    confidence: float = 0.8
    reinforcements: int = 1
    pinned: bool = False
    status: str = "active"
    properties: dict[str, Any] = field(default_factory=dict)
    events: tuple[tuple[str, datetime, str], ...] = ()
    """Further events after ``created``: (kind, time, cause)."""


def import_items(conn: Connection, profile: str, rows: Iterable[ItemIn]) -> int:
    """Insert items and their events (a ``created`` event each, then ``events``). Ownership
    still comes from the source turn: a turn of another profile raises InvalidInput."""
    count = 0
    with write(conn):
        for row in rows:
            if row.category not in CATEGORIES:
                raise InvalidInput(f"unknown category {row.category!r}")
            if row.source_turn_id is not None:
                owner = conn.execute(
                    "SELECT profile FROM turns WHERE id = ?", (row.source_turn_id,)
                ).fetchone()
                if owner is None or owner[0] != profile:
                    raise InvalidInput("a memory belongs to the profile of its source turn")
            ts = to_stored(row.when)
            topic = topic_key(row.topic) or topic_key(row.label)
            cur = conn.execute(
                "INSERT INTO memory_items(profile, category, topic, label, properties, "
                "content_key, confidence, reinforcements, pinned, reason, source, "
                "source_turn_id, created_at, reinforced_at, status) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'imported', 'import', ?, ?, ?, ?)",
                (
                    profile,
                    row.category,
                    topic,
                    row.label,
                    json.dumps(row.properties, ensure_ascii=False),
                    content_key(row.label, row.properties),
                    row.confidence,
                    row.reinforcements,
                    int(row.pinned),
                    row.source_turn_id,
                    ts,
                    ts,
                    row.status,
                ),
            )
            item_id = cur.lastrowid
            history = [("created", row.when, "import")] + list(row.events)
            conn.executemany(
                "INSERT INTO memory_events(item_id, profile, ts, kind, cause, source_turn_id) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(item_id, profile, to_stored(w), k, c, row.source_turn_id) for k, w, c in history],
            )
            count += 1
    return count
