"""Sessions, detected by rheo itself (Rheo article §03): a turn more than the gap (default 2 hours)
after
the previous turn of the same profile opens a new session."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..store.errors import NotFound
from ..store.timeutil import from_stored

DEFAULT_GAP_S = 2 * 3600.0
"""The default session gap, in seconds."""


@dataclass(frozen=True)
class Session:
    """A session row: times are stored UTC text; ``turns`` counts its turns. ``id`` is unique
    in the store; ``number`` is what the person sees (``s3``): 1, 2, 3... within the profile,
    given when the session opens and never recomputed (a purged session leaves a gap)."""

    id: int
    profile: str
    started_at: str
    last_turn_at: str
    turns: int
    number: int = 0

    def to_json(self) -> dict[str, Any]:
        """JSON shape for ``rheo sessions list --json``."""
        return {
            "id": self.id,
            "number": self.number,
            "profile": self.profile,
            "started_at": self.started_at,
            "last_turn_at": self.last_turn_at,
            "turns": self.turns,
        }


def _row(row: sqlite3.Row) -> Session:
    return Session(
        id=row["id"],
        profile=row["profile"],
        started_at=row["started_at"],
        last_turn_at=row["last_turn_at"],
        turns=row["turns"],
        number=row["number"] or 0,
    )


def latest_session(conn: sqlite3.Connection, profile: str) -> Session | None:
    """The profile's most recent session, or None if it has none."""
    row = conn.execute(
        "SELECT * FROM sessions WHERE profile = ? ORDER BY id DESC LIMIT 1", (profile,)
    ).fetchone()
    return _row(row) if row else None


def previous_session(
    conn: sqlite3.Connection, profile: str, before_id: int | None
) -> Session | None:
    """The profile's session just before session ``before_id`` (its latest when None)."""
    if before_id is None:
        return latest_session(conn, profile)
    row = conn.execute(
        "SELECT * FROM sessions WHERE profile = ? AND id < ? ORDER BY id DESC LIMIT 1",
        (profile, before_id),
    ).fetchone()
    return _row(row) if row else None


def is_open(session: Session, now: datetime, gap_s: float) -> bool:
    """True when a turn at ``now`` would still join ``session``: at most ``gap_s`` seconds
    after its last turn (or before its first: a clock set back further than the gap, to replay
    older history, starts a session of its own).
    """
    return within_gap(session.started_at, session.last_turn_at, now, gap_s)


def within_gap(started_at: str, last_turn_at: str, now: datetime, gap_s: float) -> bool:
    """True when ``now`` is at most ``gap_s`` seconds after ``last_turn_at`` and at most
    ``gap_s`` before ``started_at`` (stored UTC text): the session-joining rule."""
    after_last = (now - from_stored(last_turn_at)).total_seconds()
    before_first = (from_stored(started_at) - now).total_seconds()
    return after_last <= gap_s and before_first <= gap_s


def active_session(
    conn: sqlite3.Connection, profile: str, now: datetime, gap_s: float
) -> Session | None:
    """The session a turn at ``now`` would join, or None if it would open a new one."""
    latest = latest_session(conn, profile)
    if latest is not None and is_open(latest, now, gap_s):
        return latest
    return None


def get_session(conn: sqlite3.Connection, profile: str, session_id: int) -> Session:
    """Session ``session_id`` (the store's id) of ``profile``; raises NotFound otherwise."""
    row = conn.execute(
        "SELECT * FROM sessions WHERE id = ? AND profile = ?", (session_id, profile)
    ).fetchone()
    if row is None:
        raise NotFound(f"no session #{session_id} in profile {profile!r}")
    return _row(row)


def session_by_number(conn: sqlite3.Connection, profile: str, number: int) -> Session:
    """The profile's session shown as ``s<number>``; raises NotFound when there is none (never
    existed, or was purged)."""
    row = conn.execute(
        "SELECT * FROM sessions WHERE profile = ? AND number = ?", (profile, number)
    ).fetchone()
    if row is None:
        raise NotFound(f"no session s{number} in profile {profile!r}")
    return _row(row)


def session_numbers(conn: sqlite3.Connection, profile: str) -> dict[int, int]:
    """``{session id: number shown to the person}`` for every session of ``profile``."""
    rows = conn.execute("SELECT id, number FROM sessions WHERE profile = ?", (profile,)).fetchall()
    return {r["id"]: r["number"] for r in rows}


def list_sessions(conn: sqlite3.Connection, profile: str, *, limit: int = 20) -> list[Session]:
    """The profile's last ``limit`` sessions, newest first, with their numbers."""
    rows = conn.execute(
        "SELECT * FROM sessions WHERE profile = ? ORDER BY id DESC LIMIT ?", (profile, limit)
    ).fetchall()
    return [_row(r) for r in rows]


def attach_turn(
    conn: sqlite3.Connection,
    *,
    profile: str,
    ts: str,
    gap_s: float,
    session_id: int | None = None,
    new_session: bool = False,
) -> tuple[Session, bool, Session | None]:
    """Pick (or open) the session for a turn at stored time ``ts`` and count the turn in it.

    Must run inside the caller's write transaction. Returns ``(session, opened, closed)``:
    ``opened`` when a new session was created, ``closed`` the previous session it ended.
    Raises NotFound when ``session_id`` is not a session of ``profile``.
    """
    previous = latest_session(conn, profile)
    if session_id is not None:
        target = get_session(conn, profile, session_id)
        opened, closed = False, None
    elif previous is not None and not new_session and is_open(previous, from_stored(ts), gap_s):
        target, opened, closed = previous, False, None
    else:
        cur = conn.execute(
            "INSERT INTO sessions(profile, started_at, last_turn_at, turns) VALUES (?, ?, ?, 0)",
            (profile, ts, ts),
        )
        assert cur.lastrowid is not None
        target = get_session(conn, profile, cur.lastrowid)  # numbered by the insert trigger
        opened, closed = True, previous
    first = min(target.started_at, ts)
    last = max(target.last_turn_at, ts)
    conn.execute(
        "UPDATE sessions SET started_at = ?, last_turn_at = ?, turns = turns + 1 WHERE id = ?",
        (first, last, target.id),
    )
    updated = Session(target.id, profile, first, last, target.turns + 1, target.number)
    return updated, opened, closed


def session_span(session: Session) -> tuple[datetime, datetime]:
    """(start, last turn) of a session as aware UTC datetimes."""
    return from_stored(session.started_at), from_stored(session.last_turn_at)
