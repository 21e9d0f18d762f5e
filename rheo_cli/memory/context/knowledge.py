"""KNOWLEDGE: passages of the person's knowledge base that match the message (Solid# article,
Layer 3.5 — injected after memory, no decay), each with the document it comes from."""

from __future__ import annotations

from ..kb.search import search_chunks
from ..retrieval.lines import Line
from ..retrieval.query import Query
from ..store.api import Connection
from ..text.render import clip, entry

MAX_PASSAGES = 6
"""Candidates read per message; the budget decides how many are injected."""

PASSAGE_TOKENS = 300
"""Longest passage injected (tokens); a longer chunk keeps its head and tail."""

MIN_RELATIVE_SCORE = 0.3
"""A passage scoring under this fraction of the best one's bm25 is left out."""


def knowledge_lines(conn: Connection, profile: str, query: Query) -> list[Line]:
    """Candidate KNOWLEDGE lines for a message's ``query`` (its content words, stop words
    already dropped): ranked 1.0–1.9 (the scale of RELEVANT HISTORY hits), best bm25 match
    first, each prefixed ``[title › heading]``. Empty when nothing matches."""
    words = " ".join(dict.fromkeys([*query.terms, *(e.lower() for e in query.entities)]))
    passages = search_chunks(conn, profile, words, limit=MAX_PASSAGES) if words else []
    if not passages:
        return []
    best = passages[0].score or -1e-9
    lines = []
    for n, p in enumerate(passages):
        relative = p.score / best if best < 0 else 1.0
        if relative < MIN_RELATIVE_SCORE:
            continue
        heading = p.heading.removeprefix(p.title).lstrip(" >") if p.heading else ""
        where = p.title + (f" › {heading}" if heading else "")
        lines.append(
            Line(
                text=entry(f"[{where}] ", clip(p.content, PASSAGE_TOKENS)),
                source=f"kb:{p.chunk_id}",
                rank=1.0 + 0.9 * relative,
                order=(float(n),),
                why=f"knowledge base: {p.source} (version {p.version})",
            )
        )
    return lines
