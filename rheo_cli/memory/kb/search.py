"""Finding knowledge-base chunks for a message or a query: FTS5 bm25 over the active
documents of one profile, scoped in SQL before the limit."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from .. import pgsearch
from ..store.pg import dialect
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
    conn: sqlite3.Connection,
    profile: str,
    query: str,
    *,
    limit: int = 10,
    any_term: bool = True,
) -> list[Passage]:
    """Chunks of ``profile``'s active documents matching ``query``, best first (bm25, the
    heading weighted twice the body). ``any_term`` False requires every word. Any text is a
    safe query (see `fts.terms`); text with no searchable word returns []."""
    expr = fts.match_any(query) if any_term else fts.match_all(query)
    if expr is None:
        return []
    if dialect(conn) == "postgres":
        rows = pgsearch.search_chunks(
            conn, profile, fts.terms(query), any_term=any_term, limit=limit
        )
    else:
        rows = _sqlite_chunks(conn, profile, expr, limit)
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


def _sqlite_chunks(conn: sqlite3.Connection, profile: str, expr: str, limit: int) -> list[Any]:
    """The FTS5 query of `search_chunks` (bm25, heading weighted twice the body)."""
    return conn.execute(
        "SELECT c.id, c.document_id, d.source, d.title, d.version, c.heading, c.content, "
        "bm25(kb_chunks_fts, 2.0, 1.0) AS score "
        "FROM kb_chunks_fts JOIN kb_chunks c ON c.id = kb_chunks_fts.rowid "
        "JOIN kb_documents d ON d.id = c.document_id "
        "WHERE kb_chunks_fts MATCH ? AND c.profile = ? AND d.status = 'active' "
        "ORDER BY score LIMIT ?",
        (expr, profile, limit),
    ).fetchall()
