"""Export: everything of a profile as plain records, in an order where everything a record
refers to comes first — sessions, turns, digests, memory items, memory events — read from one
snapshot. A re-export of an imported store is identical to the file it came from."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..store.api import Connection, Row
from .keys import FORMAT, Keyed, keys_of


def profiles(conn: Connection) -> list[str]:
    """Every profile with something stored, sorted."""
    rows = conn.execute(
        "SELECT profile FROM sessions UNION SELECT profile FROM memory_items ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]


def has_assistant_items(conn: Connection, names: list[str]) -> bool:
    """True when a profile of ``names`` holds a memory item of one assistant (not shared):
    its export then needs a reader that knows ``assistant`` (format version 3)."""
    return any(
        conn.execute(
            "SELECT 1 FROM memory_items WHERE profile = ? AND assistant IS NOT NULL LIMIT 1",
            (name,),
        ).fetchone()
        is not None
        for name in names
    )


def header(names: list[str], version: int = 1) -> dict[str, Any]:
    """The first record of an export: format name, version (`keys.version_for`), the
    profiles it holds."""
    return {"type": "header", "format": FORMAT, "version": version, "profiles": names}


def export_records(
    conn: Connection, names: list[str], version: int = 1
) -> Iterator[dict[str, Any]]:
    """The header (saying ``version``), then every record of the profiles ``names`` (see the
    module docstring).

    Reads one snapshot: the caller should hold a read transaction (`exchange.snapshot`) so that
    writes by another process do not mix into the export."""
    yield header(names, version)
    for profile in names:
        yield from _export_profile(conn, profile)


def _ref(keys: dict[int, str], value: int | None) -> str | None:
    return keys.get(value) if value is not None else None


def _export_profile(conn: Connection, profile: str) -> Iterator[dict[str, Any]]:
    """Every record of ``profile``, kind by kind in `keys.KINDS` order, rows in id order."""
    k = keys_of(conn, profile)
    for r in conn.execute("SELECT * FROM sessions WHERE profile = ? ORDER BY id", (profile,)):
        yield _session_record(r, profile, k)
    for r in conn.execute("SELECT * FROM turns WHERE profile = ? ORDER BY id", (profile,)):
        yield _turn_record(r, profile, k)
    for r in conn.execute("SELECT * FROM digests WHERE profile = ? ORDER BY id", (profile,)):
        yield _digest_record(r, profile, k)
    for r in conn.execute("SELECT * FROM memory_items WHERE profile = ? ORDER BY id", (profile,)):
        yield _item_record(r, profile, k)
    for r in conn.execute("SELECT * FROM memory_events WHERE profile = ? ORDER BY id", (profile,)):
        yield _event_record(r, profile, k)


def _session_record(r: Row, profile: str, k: Keyed) -> dict[str, Any]:
    """The record of the ``sessions`` row ``r``."""
    return {
        "type": "session",
        "key": k.sessions[r["id"]],
        "profile": profile,
        "started_at": r["started_at"],
        "last_turn_at": r["last_turn_at"],
        "turns": r["turns"],
    }


def _turn_record(r: Row, profile: str, k: Keyed) -> dict[str, Any]:
    """The record of the ``turns`` row ``r``: ``meta``'s ``reply_to`` (a turn id) as a turn
    key; token ``usage`` only on an assistant turn that counted it."""
    meta = json.loads(r["meta"] or "{}")
    if isinstance(meta.get("reply_to"), int):
        meta["reply_to"] = k.turns.get(meta["reply_to"])
    usage = None
    if r["role"] == "assistant" and r["input_tokens"] is not None:
        usage = {
            c: r[c]
            for c in (
                "input_tokens",
                "output_tokens",
                "cache_read_tokens",
                "cache_write_tokens",
            )  # fmt: skip
        }
    return {
        "type": "turn",
        "key": k.turns[r["id"]],
        "profile": profile,
        "session": k.sessions[r["session_id"]],
        "role": r["role"],
        "content": r["content"],
        "ts": r["ts"],
        "model": r["model"],
        "status": r["status"],
        "usage": usage,
        "meta": meta,
        "source_key": r["source_key"],
    }


def _digest_record(r: Row, profile: str, k: Keyed) -> dict[str, Any]:
    """The record of the ``digests`` row ``r``: turn ids (a fact's ``turn_id``, the source
    turns) as turn keys, the JSON columns decoded."""
    facts = json.loads(r["facts"])
    for fact in facts:
        if isinstance(fact, dict) and isinstance(fact.get("turn_id"), int):
            fact["turn_id"] = k.turns.get(fact["turn_id"])
    return {
        "type": "digest",
        "key": k.digests[r["id"]],
        "profile": profile,
        "session": k.sessions[r["session_id"]],
        "started_at": r["started_at"],
        "ended_at": r["ended_at"],
        "narrative": r["narrative"],
        "facts": facts,
        "procedures": json.loads(r["procedures"]),
        "decisions": json.loads(r["decisions"]),
        "source_turns": [k.turns.get(i) for i in json.loads(r["source_turn_ids"])],
        "model": r["model"],
        "created_at": r["created_at"],
    }


def _item_record(r: Row, profile: str, k: Keyed) -> dict[str, Any]:
    """The record of the ``memory_items`` row ``r``: row ids as keys; ``assistant`` and the
    validity window only when set."""
    return {
        "type": "memory_item",
        "key": k.items[r["id"]],
        "profile": profile,
        **{
            c: r[c]
            for c in (
                "category",
                "topic",
                "label",
                "content_key",
                "confidence",
                "reinforcements",
                "reason",
                "source",
                "created_at",
                "reinforced_at",
                "status",
                "due_at",
            )  # fmt: skip
        },
        "properties": json.loads(r["properties"]),
        "pinned": bool(r["pinned"]),
        "source_turn": _ref(k.turns, r["source_turn_id"]),
        "superseded_by": _ref(k.items, r["superseded_by"]),
        "conflict_with": _ref(k.items, r["conflict_with"]),
        # Only on an assistant's own fact: a shared one's record stays as it always was.
        **({"assistant": r["assistant"]} if r["assistant"] is not None else {}),
        # Only on a fact with a validity window, likewise.
        **{c: r[c] for c in ("valid_from", "valid_until") if r[c] is not None},
    }


def _event_record(r: Row, profile: str, k: Keyed) -> dict[str, Any]:
    """The record of the ``memory_events`` row ``r``: row ids as keys, ``data`` decoded."""
    return {
        "type": "memory_event",
        "key": k.events[r["id"]],
        "profile": profile,
        "item": k.items[r["item_id"]],
        "ts": r["ts"],
        "kind": r["kind"],
        "cause": r["cause"],
        "related_item": _ref(k.items, r["related_item_id"]),
        "source_turn": _ref(k.turns, r["source_turn_id"]),
        "data": json.loads(r["data"] or "{}"),
    }
