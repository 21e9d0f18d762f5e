"""Sessions closed by time alone: finding them and queueing their digest job.

A session closes when the gap (default 2 hours) passes without a turn; nothing happens at that
moment, so whenever rheo opens the store (and when the background worker starts) it looks at
the profile's newest sessions and queues a digest job for each closed one that has neither a
digest nor a job. The read is one indexed query over a handful of rows; a write happens only
when something is found, at most once per session.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from ..store.api import Connection
from ..store.db import write
from ..store.timeutil import from_stored, to_stored

RECENT_SESSIONS = 8
"""How many of a profile's newest sessions (by their last turn's time) are looked at (older
ones were closed by the next session's first turn, which queued their digest, or are left to
``rheo maintain``)."""

QUICK_WAIT_S = 0.25
"""How long (seconds) queueing waits for another process's write lock before giving up: it
is opportunistic and must never hold up the command that triggered it."""

RECENT_UNDIGESTED = (
    "SELECT s.id FROM (SELECT id, profile, last_turn_at FROM sessions WHERE profile = ? "
    "ORDER BY last_turn_at DESC, id DESC LIMIT ?) s WHERE s.last_turn_at < ? "
    "AND NOT EXISTS (SELECT 1 FROM digests d WHERE d.session_id = s.id) "
    "AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id "
    "AND t.source_key IS NOT NULL) "
    "AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.profile = s.profile "
    "AND j.kind = 'digest' AND j.ref_id = s.id) ORDER BY s.id"
)
"""Arguments: profile, `RECENT_SESSIONS`, the stored UTC instant before which a session whose
last turn lies is closed (now minus the gap)."""


def closed_without_digest(
    conn: Connection, *, profile: str, now: datetime, gap_s: float
) -> list[int]:
    """Ids of the profile's newest sessions (`RECENT_SESSIONS`) that are closed at ``now``
    (aware) — last turn more than ``gap_s`` seconds earlier — with no digest and no digest job,
    oldest first. Sessions of imported history (turns with a ``source_key``) are left out:
    they are digested only when the import asks. Reads only."""
    closed_before = to_stored(now - timedelta(seconds=gap_s))
    rows = conn.execute(RECENT_UNDIGESTED, (profile, RECENT_SESSIONS, closed_before)).fetchall()
    return [int(r[0]) for r in rows]


def queue_closed_sessions(
    conn: Connection,
    *,
    profile: str,
    now: datetime,
    gap_s: float,
    wait_s: float | None = QUICK_WAIT_S,
) -> list[int]:
    """Queue a digest job for each session `closed_without_digest` finds; returns the ids of
    the sessions newly queued (idempotent: a second call returns ``[]``).

    ``wait_s`` bounds the wait for the write lock, one try (None: the store's own bounded
    wait, `api.BUSY_TIMEOUT_S`), on both stores. Raises Busy when the lock stays taken, and
    another StoreError when the store cannot be written (a read-only file); callers that
    queue opportunistically ignore it (the next run queues them).
    """
    found = closed_without_digest(conn, profile=profile, now=now, gap_s=gap_s)
    if not found:
        return []
    ts = to_stored(now)
    queued = []
    with write(conn, attempts=1, wait_s=wait_s):
        for session_id in found:
            cur = conn.execute(
                "INSERT INTO jobs(profile, kind, ref_id, created_at, updated_at) "
                "VALUES (?, 'digest', ?, ?, ?) ON CONFLICT DO NOTHING",
                (profile, session_id, ts, ts),
            )
            if cur.rowcount == 1:
                queued.append(session_id)
    return queued


NEWEST_OPEN = (
    "SELECT s.last_turn_at FROM sessions s WHERE s.profile = ? "
    "AND NOT EXISTS (SELECT 1 FROM digests d WHERE d.session_id = s.id) "
    "AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.profile = s.profile "
    "AND j.kind = 'digest' AND j.ref_id = s.id) ORDER BY s.last_turn_at DESC, s.id DESC LIMIT 1"
)


def next_close(conn: Connection, *, profile: str, gap_s: float) -> datetime | None:
    """When the profile's newest session without a digest or digest job closes by time: its
    last turn plus ``gap_s`` seconds (aware, UTC); None when every session has one. Reads
    only."""
    row = conn.execute(NEWEST_OPEN, (profile,)).fetchone()
    if row is None or row[0] is None:
        return None
    last = row[0] if isinstance(row[0], datetime) else from_stored(str(row[0]))
    return last + timedelta(seconds=gap_s)


def profiles_with_sessions(conn: Connection) -> list[str]:
    """Every profile that has at least one session (for the worker, which serves them all):
    one index seek per profile, however many sessions there are."""
    rows = conn.execute(
        "WITH RECURSIVE p(name) AS (SELECT min(profile) FROM sessions UNION ALL "
        "SELECT (SELECT min(profile) FROM sessions WHERE profile > p.name) FROM p "
        "WHERE p.name IS NOT NULL) SELECT name FROM p WHERE name IS NOT NULL"
    ).fetchall()
    return [str(r[0]) for r in rows]
