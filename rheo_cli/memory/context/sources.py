"""Candidate lines for each context section, read from the store and ranked.

Every function here reads only. Lines are already rendered and escaped (`render.entry`), so
stored text cannot forge a header, and each carries its source row and the turns it stands for.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import datetime, tzinfo
from typing import TypeVar

from ..facts import items as item_store
from ..ledger import digests as digest_store
from ..ledger import turns as ledger
from ..retrieval import history as relevant
from ..retrieval.lines import (
    CURRENT_MEMORY,
    CURRENT_SESSION,
    EPISODIC,
    OPEN_ITEMS,
    RELEVANT_HISTORY,
    Line,
)
from ..retrieval.query import Query, analyse
from ..retrieval.relevance import COVERAGE_WEIGHT, Scorer
from ..store.errors import EngineError, NotFound
from ..store.settings import Settings
from ..store.timeutil import display, from_stored
from ..text.render import INDENT, clip, entry

T = TypeVar("T")
MATCH_THRESHOLD = 0.5
"""Relevance (see `relevance`) from which a fact counts as matching the message."""


def collect(
    conn: sqlite3.Connection,
    *,
    profile: str,
    message: str,
    now: datetime,
    tz: tzinfo | None,
    settings: Settings,
    session_id: int | None,
    before_turn_id: int | None,
    budget: int,
    unreadable: dict[str, str] | None = None,
) -> dict[str, list[Line]]:
    """Candidate lines for every section, keyed by section name (see `context.ORDER`).

    A section whose part of the store cannot be read (a damaged index, a missing table, a
    corrupt row) comes back empty, and ``unreadable`` (when given) gets section -> reason:
    memory never stops the chat. Without ``unreadable`` such errors are raised."""

    def guarded(section: str, read: Callable[[], T], empty: T) -> T:
        if unreadable is None:
            return read()
        try:
            return read()
        except (sqlite3.DatabaseError, EngineError, ValueError, TypeError, KeyError) as exc:
            unreadable[section] = " ".join(str(exc).split())[:160] or type(exc).__name__
            return empty

    no_items: list[item_store.MemoryItem] = []
    none: list[Line] = []
    active = guarded(
        CURRENT_MEMORY, lambda: item_store.list_items(conn, profile, statuses=("active",)), no_items
    )
    query = analyse(message, now)
    out = {
        OPEN_ITEMS: guarded(OPEN_ITEMS, lambda: open_item_lines(active, now, tz, budget), none),
        EPISODIC: guarded(
            EPISODIC, lambda: episodic_lines(conn, profile, tz, settings, budget), none
        ),
        CURRENT_MEMORY: guarded(
            CURRENT_MEMORY,
            lambda: memory_lines(
                conn, profile, active, message, now, tz, settings, budget, query=query
            ),
            none,
        ),
        CURRENT_SESSION: [],
    }
    if session_id is not None:
        out[CURRENT_SESSION] = guarded(
            CURRENT_SESSION,
            lambda: session_lines(conn, profile, session_id, before_turn_id, tz, settings, budget),
            none,
        )
    skip_turns = {t for line in out[CURRENT_SESSION] for t in line.turn_ids}
    if before_turn_id is not None:
        skip_turns.add(before_turn_id)
    skip_digests = {int(line.source.split(":")[1]) for line in out[EPISODIC]}
    out[RELEVANT_HISTORY] = guarded(
        RELEVANT_HISTORY,
        lambda: relevant.collect(
            conn,
            profile=profile,
            message=message,
            query=query,
            now=now,
            tz=tz,
            budget=budget,
            skip_turns=skip_turns,
            skip_digests=skip_digests,
        ),
        none,
    )
    return out


def turn_prefix(turn: ledger.Turn, tz: tzinfo | None) -> str:
    """``[YYYY-MM-DD HH:MM] user: `` (with ``(interrupted)``/``(error)`` marks when so)."""
    mark = f" ({turn.status})" if turn.status in ("interrupted", "error") else ""
    return f"[{display(turn.ts, tz)}] {turn.role}{mark}: "


def _pair_key(turn: ledger.Turn) -> tuple[int, int]:
    reply_to = turn.meta.get("reply_to") if turn.role == "assistant" else None
    return (reply_to, turn.id) if isinstance(reply_to, int) else (turn.id, turn.id)


def session_lines(
    conn: sqlite3.Connection,
    profile: str,
    session_id: int,
    before_turn_id: int | None,
    tz: tzinfo | None,
    settings: Settings,
    budget: int,
) -> list[Line]:
    """The active session's last turns (seed 1: ~12), newest ranked highest.

    Empty failed replies are left out; a turn longer than about a third of the budget is
    clipped in the middle, with its id in the marker so the full text can be looked up.
    """
    turns = ledger.session_turns(
        conn, profile, session_id, limit=settings.session_turns + 4, before_id=before_turn_id
    )
    turns = [t for t in turns if t.content.strip()][-settings.session_turns :]
    # Two processes answering at once interleave their turns in the ledger; show each reply
    # right after the question it answers.
    turns.sort(key=_pair_key)
    per_line = max(60, int(budget * 0.35))
    lines = []
    for n, turn in enumerate(turns):
        body = clip(turn.content, per_line, marker=f"; full text in turn #{turn.id}")
        lines.append(
            Line(
                text=entry(turn_prefix(turn, tz), body),
                source=f"turn:{turn.id}",
                rank=10.0 + n,
                order=(float(n),),
                why="recent turn of this session",
                turn_ids=(turn.id,),
            )
        )
    return lines


def open_item_lines(
    active: list[item_store.MemoryItem], now: datetime, tz: tzinfo | None, budget: int
) -> list[Line]:
    """Open commitments (category ``open_item``), soonest due first, then newest."""
    per_line = max(40, int(budget * 0.1))
    lines = []
    for item in active:
        if item.category != "open_item":
            continue
        when = f"since {display(item.created_at, tz, with_time=False)}"
        if item.due_at:
            when += f", due {display(item.due_at, tz, with_time=False)}"
        due_key = from_stored(item.due_at).timestamp() if item.due_at else float("inf")
        lines.append(
            Line(
                text=entry(f"- ({when}) ", clip(item.content_text(), per_line)),
                source=f"item:{item.id}",
                rank=5.0 - min(1.0, max(0.0, due_key / 1e11)) + (0.5 if item.pinned else 0.0),
                order=(due_key, float(item.id)),
                why="open commitment" + (f", due {item.due_at[:10]}" if item.due_at else ""),
                turn_ids=(item.source_turn_id,) if item.source_turn_id else (),
            )
        )
    return lines


def episodic_lines(
    conn: sqlite3.Connection, profile: str, tz: tzinfo | None, settings: Settings, budget: int
) -> list[Line]:
    """The last digests (seed 1: five), newest first, each dated with its session's end."""
    per_line = max(60, int(budget * 0.15))
    lines = []
    for n, digest in enumerate(digest_store.recent_digests(conn, profile, settings.digests)):
        body = digest.narrative
        if digest.decisions:
            body += "\nDecided: " + "; ".join(digest.decisions)
        lines.append(
            Line(
                text=entry(f"[{display(digest.ended_at, tz)}] ", clip(body, per_line)),
                source=f"digest:{digest.id}",
                rank=1.5 - 0.1 * n,
                order=(float(n),),
                why=f"digest of session #{digest.session_id}",
                turn_ids=digest.source_turns,
            )
        )
    return lines


def memory_lines(
    conn: sqlite3.Connection,
    profile: str,
    active: list[item_store.MemoryItem],
    message: str,
    now: datetime,
    tz: tzinfo | None,
    settings: Settings,
    budget: int,
    *,
    query: Query | None = None,
) -> list[Line]:
    """Active facts: those whose topic or content match the message first (FTS5 over items,
    seed 2's topic-match boosting, graded by `relevance`), then by effective confidence.

    A fact that matches ranks 1 + its relevance (with the history hits); one that doesn't
    ranks below 1, by confidence, and takes only budget nobody more relevant needs.
    """
    facts = [i for i in active if i.category != "open_item"]
    query = query if query is not None else analyse(message, now)
    scorer = Scorer.for_pool(query, (f"{i.topic} {i.content_text()}" for i in facts))
    # Active facts are few (the cap): each is scored directly; the FTS index over items
    # narrows them first only past a few hundred.
    candidates: set[int] | None = None
    if len(facts) > 300 and not query.empty:
        candidates = {i.id for i, _ in item_store.search_items(conn, profile, message, limit=300)}
    per_line = max(40, int(budget * 0.1))
    lines = []
    for item in facts:
        confidence = item.effective(now, settings)
        flags = [item.category, display(item.reinforced_at, tz, with_time=False)]
        if item.pinned:
            flags.append("pinned")
        text = entry(f"- ({', '.join(flags)}) ", clip(item.content_text(), per_line))
        if item.conflict_with:
            try:
                older = item_store.get_item(conn, profile, item.conflict_with).content_text()
            except NotFound:
                older = "?"
            text += "\n" + entry(
                INDENT,
                f"(contradicts an earlier fact, also confident: {clip(older, per_line)!r}; "
                "confirm with the person if it matters)",
            )
        relevance: float = 0.0
        matched: list[str] = []
        if not query.empty and (candidates is None or item.id in candidates):
            text_of_item = f"{item.topic} {item.content_text()}"
            coverage, matched, _phrases = scorer.score(text_of_item)
            # No bm25 here: coverage stands in for it, on the history hits' scale.
            relevance = coverage * (1 + 1 / COVERAGE_WEIGHT) if matched else 0.0
        hit = relevance >= MATCH_THRESHOLD
        if hit:
            rank = 1.0 + relevance + 0.3 * confidence
            why = "matched: " + ", ".join(matched[:6]) if matched else "matched (bm25)"
        else:
            rank = 0.9 * confidence
            why = f"confidence {confidence:.2f}"
        lines.append(
            Line(
                text=text,
                source=f"item:{item.id}",
                rank=rank + (0.5 if item.pinned else 0.0),
                order=(-(1.0 if hit else 0.0), -confidence, -float(item.id)),
                why=why,
                turn_ids=(item.source_turn_id,) if item.source_turn_id else (),
            )
        )
    return lines
