"""Plain FTS5 bm25 over one profile's turns: the yardstick the benchmarks compare rheo with.

No query analysis, no re-ranking: any word of the text (`fts.match_any`), the profile's
turns only (inside MATCH), FTS5's own ``bm25()`` order, top ``limit``. rheo's own retrieval
never uses it; `bench/locomo.py` fills its baseline context from it and `bench/scale.py`
times it to express rheo's latencies as ratios that compare across machines.
"""

from __future__ import annotations

import sqlite3

from .. import pgsearch
from ..store.pg import dialect
from ..text import fts


def plain_bm25(conn: sqlite3.Connection, profile: str, text: str, limit: int = 50) -> list[int]:
    """Ids of ``profile``'s best ``limit`` turns for ``text`` by FTS5 bm25, best first;
    [] when the text has no searchable word."""
    expr = fts.match_any(text)
    if expr is None:
        return []
    if dialect(conn) == "postgres":
        return pgsearch.plain_turn_ids(conn, profile, fts.terms(text), limit)
    plain = conn.cursor()
    plain.row_factory = None
    plain.execute(
        "SELECT rowid FROM turns_fts WHERE turns_fts MATCH ? ORDER BY rank LIMIT ?",
        (fts.scoped(expr, profile), limit),
    )
    return [r[0] for r in plain.fetchall()]
