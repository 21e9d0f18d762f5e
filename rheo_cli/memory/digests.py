"""Session digests (seed 1, layer 1), read side: compressed summaries of closed sessions."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from .errors import NotFound


@dataclass(frozen=True)
class Digest:
    """One digest: the session's dates (stored UTC text), a narrative, and structured lists."""

    id: int
    profile: str
    session_id: int
    started_at: str
    ended_at: str
    narrative: str
    facts: list[Any]
    procedures: list[str]
    decisions: list[str]
    source_turn_ids: list[int]
    model: str | None
    created_at: str

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` shape of a digest."""
        return {
            "id": self.id,
            "session_id": self.session_id,
            "started_at": self.started_at,
            "ended_at": self.ended_at,
            "narrative": self.narrative,
            "facts": self.facts,
            "procedures": self.procedures,
            "decisions": self.decisions,
            "source_turn_ids": self.source_turn_ids,
            "model": self.model,
            "created_at": self.created_at,
        }


def _list(text: str) -> list[Any]:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return []
    return value if isinstance(value, list) else []


def row_to_digest(row: sqlite3.Row) -> Digest:
    """Build a Digest from a ``digests`` row."""
    return Digest(
        id=row["id"],
        profile=row["profile"],
        session_id=row["session_id"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        narrative=row["narrative"],
        facts=_list(row["facts"]),
        procedures=[str(p) for p in _list(row["procedures"])],
        decisions=[str(d) for d in _list(row["decisions"])],
        source_turn_ids=[int(i) for i in _list(row["source_turn_ids"]) if isinstance(i, int)],
        model=row["model"],
        created_at=row["created_at"],
    )


def recent_digests(conn: sqlite3.Connection, profile: str, limit: int = 5) -> list[Digest]:
    """The profile's last ``limit`` digests by session end, newest first."""
    rows = conn.execute(
        "SELECT * FROM digests WHERE profile = ? ORDER BY ended_at DESC, id DESC LIMIT ?",
        (profile, limit),
    ).fetchall()
    return [row_to_digest(r) for r in rows]


def get_digest(conn: sqlite3.Connection, profile: str, digest_id: int) -> Digest:
    """Digest ``digest_id`` of ``profile``; raises NotFound otherwise."""
    row = conn.execute(
        "SELECT * FROM digests WHERE id = ? AND profile = ?", (digest_id, profile)
    ).fetchone()
    if row is None:
        raise NotFound(f"no digest #{digest_id} in profile {profile!r}")
    return row_to_digest(row)
