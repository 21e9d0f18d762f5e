"""Session digests (Rheo article §04, layer 1), read side: compressed summaries of closed
sessions."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, overload

from ..store.api import Connection, Row
from ..store.db import write
from ..store.errors import NotFound
from ..text.safety import mask, mask_value


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
    source_turns: TurnIds
    model: str | None
    created_at: str

    @property
    def source_turn_ids(self) -> list[int]:
        """The ids of the session's turns the digest summarises."""
        return list(self.source_turns)

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


class TurnIds(Sequence[int]):
    """A digest's source turn ids, parsed from their stored JSON only when first read (a long
    session's list is thousands of ids that context assembly rarely needs)."""

    def __init__(self, stored: str) -> None:
        self._stored = stored
        self._ids: list[int] | None = None

    def _load(self) -> list[int]:
        if self._ids is None:
            self._ids = [int(i) for i in _list(self._stored) if isinstance(i, int)]
        return self._ids

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[int]: ...

    def __getitem__(self, index: int | slice) -> int | Sequence[int]:
        return self._load()[index]

    def __len__(self) -> int:
        return len(self._load())

    def __iter__(self) -> Iterator[int]:
        return iter(self._load())

    def __eq__(self, other: object) -> bool:
        return list(self) == list(other) if isinstance(other, Sequence) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._stored)


def _list(text: str) -> list[Any]:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return []
    return value if isinstance(value, list) else []


def row_to_digest(row: Row) -> Digest:
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
        source_turns=TurnIds(row["source_turn_ids"]),
        model=row["model"],
        created_at=row["created_at"],
    )


def recent_digests(conn: Connection, profile: str, limit: int = 5) -> list[Digest]:
    """The profile's last ``limit`` digests by session end, newest first."""
    rows = conn.execute(
        "SELECT * FROM digests WHERE profile = ? ORDER BY ended_at DESC, id DESC LIMIT ?",
        (profile, limit),
    ).fetchall()
    return [row_to_digest(r) for r in rows]


def has_digest(conn: Connection, profile: str, session_id: int) -> bool:
    """Whether session ``session_id`` of ``profile`` has its digest."""
    row = conn.execute(
        "SELECT 1 FROM digests WHERE session_id = ? AND profile = ?", (session_id, profile)
    ).fetchone()
    return row is not None


def digested_until(conn: Connection, profile: str, session_id: int) -> str | None:
    """The stored UTC time of the last turn session ``session_id``'s digest covers (its
    ``ended_at``), or None when the session has no digest. A session continued after its
    digest (``rheo ask --session N``) has turns later than this, which the digest does not
    summarise."""
    row = conn.execute(
        "SELECT ended_at FROM digests WHERE session_id = ? AND profile = ?", (session_id, profile)
    ).fetchone()
    return None if row is None else str(row[0])


def get_digest(conn: Connection, profile: str, digest_id: int) -> Digest:
    """Digest ``digest_id`` of ``profile``; raises NotFound otherwise."""
    row = conn.execute(
        "SELECT * FROM digests WHERE id = ? AND profile = ?", (digest_id, profile)
    ).fetchone()
    if row is None:
        raise NotFound(f"no digest #{digest_id} in profile {profile!r}")
    return row_to_digest(row)


def store_digest(
    conn: Connection,
    *,
    profile: str,
    session_id: int,
    narrative: str,
    facts: list[Any],
    procedures: list[str],
    decisions: list[str],
    source_turn_ids: list[int],
    model: str | None,
    created_at: str,
) -> Digest:
    """Store the digest of a session, dated with the session's first and last turn.

    One digest per session (a second raises Integrity); digests, like turns,
    are append-only. Raises NotFound when the session is not the profile's.
    """
    with write(conn):
        row = conn.execute(
            "SELECT started_at, last_turn_at FROM sessions WHERE id = ? AND profile = ?",
            (session_id, profile),
        ).fetchone()
        if row is None:
            raise NotFound(f"no session #{session_id} in profile {profile!r}")
        cur = conn.store.execute_indexed(
            "digests",
            "INSERT INTO digests(profile, session_id, started_at, ended_at, narrative, facts, "
            "procedures, decisions, source_turn_ids, model, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                profile,
                session_id,
                row["started_at"],
                row["last_turn_at"],
                mask(narrative),  # secrets the person pasted never reach a digest
                json.dumps(mask_value(facts), ensure_ascii=False),
                json.dumps(mask_value(procedures), ensure_ascii=False),
                json.dumps(mask_value(decisions), ensure_ascii=False),
                json.dumps(source_turn_ids),
                model,
                created_at,
            ),
        )
        assert cur.lastrowid is not None
        return get_digest(conn, profile, cur.lastrowid)


def list_digests(conn: Connection, profile: str, *, limit: int = 20) -> list[Digest]:
    """The profile's digests, newest session first."""
    return recent_digests(conn, profile, limit)
