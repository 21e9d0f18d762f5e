"""Plain FTS5 bm25 over one profile's turns: the yardstick the benchmarks compare rheo with.

No query analysis, no re-ranking: any word of the text (`fts.match_any`), the profile's
turns only (inside MATCH), FTS5's own ``bm25()`` order, top ``limit``. rheo's own retrieval
never uses it; `bench/locomo.py` fills its baseline context from it and `bench/scale.py`
times it to express rheo's latencies as ratios that compare across machines.
"""

from __future__ import annotations

from ..store.api import Connection
from ..text import fts


def plain_bm25(conn: Connection, profile: str, text: str, limit: int = 50) -> list[int]:
    """Ids of ``profile``'s best ``limit`` turns for ``text`` by FTS5 bm25, best first;
    [] when the text has no searchable word."""
    terms = fts.terms(text)
    if not terms:
        return []
    return conn.store.plain_turn_ids(profile, terms, limit)
