"""A session's counters — ``turns``, ``started_at``, ``last_turn_at`` — kept in step with its
turns: recounted after an import adds turns to a session already stored, checked and
repaired by ``rheo doctor``. The counters are what ``sessions list`` and the ledger's size
read, so they must agree with the turns themselves."""

from __future__ import annotations

from collections.abc import Iterable

from ..store.api import Connection
from ..store.db import write


def _spans(profile: str | None) -> tuple[str, list[str]]:
    where = " WHERE profile = ?" if profile is not None else ""
    sql = (
        "SELECT session_id, count(*) AS n, min(ts) AS lo, max(ts) AS hi FROM turns"
        f"{where} GROUP BY session_id"
    )
    return sql, [profile] if profile is not None else []


def stale_sessions(conn: Connection, profile: str | None = None) -> list[int]:
    """Ids of the sessions (of ``profile``; of every profile when None) whose counters
    disagree with their turns: ``turns`` is not how many it holds, or a turn is dated before
    ``started_at`` or after ``last_turn_at``. Reads every turn of the profile once."""
    spans, args = _spans(profile)
    where = "s.profile = ? AND " if profile is not None else ""
    rows = conn.execute(
        f"SELECT s.id FROM sessions s LEFT JOIN ({spans}) t ON t.session_id = s.id "
        f"WHERE {where}(s.turns != coalesce(t.n, 0) OR t.lo < s.started_at "
        "OR t.hi > s.last_turn_at) ORDER BY s.id",
        [*args, *([profile] if profile is not None else [])],
    ).fetchall()
    return [int(r[0]) for r in rows]


def recount(conn: Connection, session_ids: Iterable[int], profile: str | None = None) -> None:
    """Set each session's ``turns`` to how many turns it holds and its span to its first and
    last turn's times (kept as they are for a session with none). Runs inside the caller's
    write transaction; ``profile`` (when given) bounds the rows touched."""
    scope = " AND profile = ?" if profile is not None else ""
    extra = [profile] if profile is not None else []
    for session_id in sorted(set(session_ids)):
        inner = [session_id, *extra]
        conn.execute(
            "UPDATE sessions SET turns = (SELECT count(*) FROM turns "
            f"WHERE session_id = ?{scope}), last_turn_at = coalesce((SELECT max(ts) "
            f"FROM turns WHERE session_id = ?{scope}), last_turn_at), started_at = "
            f"coalesce((SELECT min(ts) FROM turns WHERE session_id = ?{scope}), started_at) "
            f"WHERE id = ?{scope}",
            inner * 4,
        )


def repair(conn: Connection, profile: str | None = None) -> list[int]:
    """Recount every session whose counters disagree with its turns (`stale_sessions`), in
    one write transaction; returns their ids. No turn changes."""
    with write(conn):
        stale = stale_sessions(conn, profile)
        recount(conn, stale, profile)
    return stale
