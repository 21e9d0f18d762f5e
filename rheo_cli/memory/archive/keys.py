"""The export format's name, version and record kinds, and the stable keys by which records
refer to each other.

Records carry no local row ids: a turn's key is a hash of its profile, time, role, text, model
and status; a session's is its first turn's; a digest's its session's; a memory item's a hash
of its content (JSON with sorted keys) and origin; an event's a hash of its item's key and its
own content. A key repeated in one profile gets ``~2``, ``~3``... in id order. So importing a
file twice, or into a store that already holds some of it, adds only what is missing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

FORMAT = "rheo-export"
VERSION = 1
KINDS = ("session", "turn", "digest", "memory_item", "memory_event")


def _hash(*parts: Any) -> str:
    blob = json.dumps(parts, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("ascii")).hexdigest()[:24]


class _Keys:
    """Content keys for rows in id order; a repeated key gets ``~2``, ``~3``... suffixes."""

    def __init__(self) -> None:
        self.by_id: dict[int, str] = {}
        self._seen: dict[str, int] = {}

    def add(self, row_id: int, base: str) -> str:
        n = self._seen.get(base, 0) + 1
        self._seen[base] = n
        key = base if n == 1 else f"{base}~{n}"
        self.by_id[row_id] = key
        return key


@dataclass
class Keyed:
    """Keys of one profile's rows: id -> key per kind."""

    sessions: dict[int, str] = field(default_factory=dict)
    turns: dict[int, str] = field(default_factory=dict)
    items: dict[int, str] = field(default_factory=dict)
    events: dict[int, str] = field(default_factory=dict)
    digests: dict[int, str] = field(default_factory=dict)
    legacy: dict[str, int] = field(default_factory=dict)
    """Item and event keys as rheo computed them before JSON was canonical (from the stored
    text) -> id, so files exported then are still recognised."""


def _canonical(text: str | None) -> str:
    """JSON text with its keys sorted, as an import writes it: a key never depends on the
    order the engine wrote the keys in (the file itself holds them sorted)."""
    try:
        return json.dumps(json.loads(text or "{}"), ensure_ascii=False, sort_keys=True)
    except ValueError:
        return text or ""


def _turn_base(r: sqlite3.Row) -> str:
    return "t" + _hash(r["profile"], r["ts"], r["role"], r["content"], r["model"], r["status"])


def _item_base(r: sqlite3.Row, *, legacy: bool = False) -> str:
    properties = r["properties"] if legacy else _canonical(r["properties"])
    return "m" + _hash(
        r["profile"], r["category"], r["topic"], r["label"], properties, r["created_at"],
        r["source"],
    )  # fmt: skip


def _event_base(item_key: str, r: sqlite3.Row, *, legacy: bool = False) -> str:
    data = r["data"] if legacy else _canonical(r["data"])
    return "e" + _hash(item_key, r["ts"], r["kind"], r["cause"], data)


def keys_of(conn: sqlite3.Connection, profile: str) -> Keyed:
    """The key of every stored row of ``profile`` (sessions, turns, digests, memory items,
    memory events), computed from content as the module docstring says, and the keys items
    and events had before JSON was canonical (``legacy``)."""
    keyed = Keyed()
    turns = _Keys()
    first_turn: dict[int, str] = {}
    for r in conn.execute(
        "SELECT id, profile, session_id, ts, role, content, model, status FROM turns "
        "WHERE profile = ? ORDER BY id",
        (profile,),
    ):
        key = turns.add(r["id"], _turn_base(r))
        first_turn.setdefault(r["session_id"], key)
    keyed.turns = turns.by_id
    sessions = _Keys()
    for r in conn.execute(
        "SELECT id, started_at FROM sessions WHERE profile = ? ORDER BY id", (profile,)
    ):
        base = first_turn.get(r["id"]) or ("x" + _hash(profile, r["started_at"]))
        sessions.add(r["id"], "s" + base[1:])
    keyed.sessions = sessions.by_id
    keyed.digests = {
        r["id"]: "d" + keyed.sessions[r["session_id"]][1:]
        for r in conn.execute(
            "SELECT id, session_id FROM digests WHERE profile = ? ORDER BY id", (profile,)
        )
    }
    items, old_items = _Keys(), _Keys()
    for r in conn.execute("SELECT * FROM memory_items WHERE profile = ? ORDER BY id", (profile,)):
        items.add(r["id"], _item_base(r))
        old_items.add(r["id"], _item_base(r, legacy=True))
    keyed.items = items.by_id
    events, old_events = _Keys(), _Keys()
    for r in conn.execute(
        "SELECT id, item_id, ts, kind, cause, data FROM memory_events WHERE profile = ? "
        "ORDER BY id",
        (profile,),
    ):
        events.add(r["id"], _event_base(keyed.items[r["item_id"]], r))
        old_events.add(r["id"], _event_base(old_items.by_id[r["item_id"]], r, legacy=True))
    keyed.events = events.by_id
    keyed.legacy = {k: i for d in (old_items.by_id, old_events.by_id) for i, k in d.items()}
    return keyed
