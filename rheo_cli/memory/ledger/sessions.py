"""Sessions, detected by rheo itself (Rheo article §03): a turn more than the gap (default 2 hours)
after the previous turn of the same profile opens a new session.

"Previous", "latest" and "current" follow time (``ts``), not the order rows were written, and
only rheo's own turns count: an imported past conversation is never the current or the
previous session, however recently it was imported."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..store.api import Connection, Row
from ..store.errors import NotFound
from ..store.timeutil import from_stored, to_stored

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


def _row(row: Row) -> Session:
    return Session(
        id=row["id"],
        profile=row["profile"],
        started_at=row["started_at"],
        last_turn_at=row["last_turn_at"],
        turns=row["turns"],
        number=row["number"] or 0,
    )


OWN_TURNS = "source_key IS NULL"
"""Turns rheo itself wrote (and sessions holding them): imported history (a ``source_key``,
migration m008) is the past of another tool and never the current or previous session."""


def _session_of(conn: Connection, row: Any) -> Session | None:
    if row is None:
        return None
    found = conn.execute("SELECT * FROM sessions WHERE id = ?", (row[0],)).fetchone()
    return _row(found) if found else None


def latest_session(conn: Connection, profile: str) -> Session | None:
    """The profile's most recent session in time — the one holding its latest turn (by
    ``ts``, then id) — or None if it has none. Sessions of imported history are left out."""
    row = conn.execute(
        f"SELECT session_id FROM turns WHERE profile = ? AND {OWN_TURNS} "
        "ORDER BY ts DESC, id DESC LIMIT 1",
        (profile,),
    ).fetchone()
    return _session_of(conn, row)


def session_near(
    conn: Connection, profile: str, ts: str, *, imported: bool = False
) -> Session | None:
    """The session a turn at stored UTC time ``ts`` would continue: the one holding the
    profile's latest turn at or before ``ts`` (by time, then id), else its earliest turn after
    it (a clock set back); None for a profile with no turns. ``imported``: count imported
    history too (an import continuing its own conversations); else rheo's own turns only."""
    own = "" if imported else f" AND {OWN_TURNS}"
    row = conn.execute(
        f"SELECT session_id FROM turns WHERE profile = ? AND ts <= ?{own} "
        "ORDER BY ts DESC, id DESC LIMIT 1",
        (profile, ts),
    ).fetchone()
    if row is None:
        row = conn.execute(
            f"SELECT session_id FROM turns WHERE profile = ? AND ts > ?{own} "
            "ORDER BY ts, id LIMIT 1",
            (profile, ts),
        ).fetchone()
    return _session_of(conn, row)


def previous_session(conn: Connection, profile: str, before_id: int | None) -> Session | None:
    """The profile's session just before session ``before_id`` in time (the one holding the
    latest turn, other than that session's, at or before its start; its latest session when
    None). Sessions of imported history are never the previous session."""
    if before_id is None:
        return latest_session(conn, profile)
    current = conn.execute(
        "SELECT started_at FROM sessions WHERE id = ? AND profile = ?", (before_id, profile)
    ).fetchone()
    if current is None:
        return None
    row = conn.execute(
        f"SELECT session_id FROM turns WHERE profile = ? AND ts <= ? AND session_id != ? "
        f"AND {OWN_TURNS} ORDER BY ts DESC, id DESC LIMIT 1",
        (profile, current[0], before_id),
    ).fetchone()
    return _session_of(conn, row)


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


def active_session(conn: Connection, profile: str, now: datetime, gap_s: float) -> Session | None:
    """The session a turn at ``now`` would join (`session_near`, if still open), or None if
    it would open a new one."""
    near = session_near(conn, profile, to_stored(now))
    if near is not None and is_open(near, now, gap_s):
        return near
    return None


def get_session(conn: Connection, profile: str, session_id: int) -> Session:
    """Session ``session_id`` (the store's id) of ``profile``; raises NotFound otherwise."""
    row = conn.execute(
        "SELECT * FROM sessions WHERE id = ? AND profile = ?", (session_id, profile)
    ).fetchone()
    if row is None:
        raise NotFound(f"no session #{session_id} in profile {profile!r}")
    return _row(row)


def session_by_number(conn: Connection, profile: str, number: int) -> Session:
    """The profile's session shown as ``s<number>``; raises NotFound when there is none (never
    existed, or was purged)."""
    row = conn.execute(
        "SELECT * FROM sessions WHERE profile = ? AND number = ?", (profile, number)
    ).fetchone()
    if row is None:
        raise NotFound(f"no session s{number} in profile {profile!r}")
    return _row(row)


def session_numbers(conn: Connection, profile: str) -> dict[int, int]:
    """``{session id: number shown to the person}`` for every session of ``profile``."""
    rows = conn.execute("SELECT id, number FROM sessions WHERE profile = ?", (profile,)).fetchall()
    return {r["id"]: r["number"] for r in rows}


def list_sessions(conn: Connection, profile: str, *, limit: int = 20) -> list[Session]:
    """The profile's last ``limit`` sessions, newest first (by their last turn's time, then
    id: imported past conversations sort by their own dates), with their numbers."""
    rows = conn.execute(
        "SELECT * FROM sessions WHERE profile = ? ORDER BY last_turn_at DESC, id DESC LIMIT ?",
        (profile, limit),
    ).fetchall()
    return [_row(r) for r in rows]


def attach_turn(
    conn: Connection,
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
    previous = session_near(conn, profile, ts)
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
