"""Finding knowledge-base chunks for a message or a query: FTS5 bm25 over the active
documents of one profile, scoped in SQL before the limit."""

from __future__ import annotations

from dataclasses import dataclass

from ..store.api import Connection
from ..text import fts


@dataclass(frozen=True)
class Passage:
    """A chunk found by a search: where it comes from, its text and its bm25 score (lower is
    better)."""

    chunk_id: int
    document_id: int
    source: str
    title: str
    version: int
    heading: str
    content: str
    score: float


def search_chunks(
    conn: Connection,
    profile: str,
    query: str,
    *,
    limit: int = 10,
    any_term: bool = True,
) -> list[Passage]:
    """Chunks of ``profile``'s active documents matching ``query``, best first (bm25, the
    heading weighted twice the body). ``any_term`` False requires every word. Any text is a
    safe query (see `fts.terms`); text with no searchable word returns []."""
    terms = fts.terms(query)
    if not terms:
        return []
    rows = conn.store.search_chunks(profile, terms, any_term=any_term, limit=limit)
    return [
        Passage(
            chunk_id=r["id"],
            document_id=r["document_id"],
            source=r["source"],
            title=r["title"],
            version=r["version"],
            heading=r["heading"],
            content=r["content"],
            score=float(r["score"]),
        )
        for r in rows
    ]
