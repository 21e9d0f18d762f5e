"""Where imported turns came from: their ``source_key`` (migration m007), one per message of
the other tool's history, unique per profile. Lets an import skip what it already brought in,
and tells sessions of imported history apart from the person's own (which rheo digests
without being asked)."""

from __future__ import annotations

from collections.abc import Iterable

from ..store.api import Connection

KEY_MAX = 500
"""Longest source key accepted (characters); keys are ids, never message text."""


def known_source_keys(conn: Connection, profile: str, keys: Iterable[str]) -> set[str]:
    """Those of ``keys`` that turns of ``profile`` already carry."""
    wanted = sorted(set(keys))
    found: set[str] = set()
    plain = conn.cursor()
    plain.row_factory = None
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        plain.execute(
            f"SELECT source_key FROM turns WHERE profile = ? AND source_key IN ({marks})",
            (profile, *chunk),
        )
        found.update(r[0] for r in plain.fetchall())
    return found


def imported_session(conn: Connection, profile: str, session_id: int) -> bool:
    """Whether the session holds imported turns (those are digested only on request)."""
    row = conn.execute(
        "SELECT 1 FROM turns WHERE session_id = ? AND profile = ? AND source_key IS NOT NULL "
        "LIMIT 1",
        (session_id, profile),
    ).fetchone()
    return row is not None


def turn_roles(
    conn: Connection, profile: str, first_id: int, last_id: int
) -> list[tuple[int, str, int]]:
    """``[(turn id, role, session id)]`` of the profile's turns with ids in
    ``first_id..last_id``, in id order (the turns one import wrote)."""
    rows = conn.execute(
        "SELECT id, role, session_id FROM turns WHERE profile = ? AND id BETWEEN ? AND ? "
        "ORDER BY id",
        (profile, first_id, last_id),
    ).fetchall()
    return [(int(r[0]), str(r[1]), int(r[2])) for r in rows]
