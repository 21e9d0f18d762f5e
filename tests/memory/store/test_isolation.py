"""Profiles isolated inside every query: what one profile sees — its
context, its history search, its memory search — is the same whether another profile holds
nothing or 10,000 turns using the same words. Candidates are chosen inside the word index
among the profile's own turns, and ranked by the profile's own statistics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rheo_cli.memory import bulk
from rheo_cli.memory.context import assemble as context
from rheo_cli.memory.facts.items import search_items
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.retrieval.baseline import plain_bm25
from rheo_cli.memory.store import db
from rheo_cli.memory.store.settings import Settings

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
S = Settings()
HOME = [
    "The Nutrifax invoice plan: send it to Acme on Friday",
    "Remind me about the garden fence and the invoice from the carpenter",
    "We planned the Lisbon trip, flights on May 3",
    "Pay the invoice for the piano lessons",
    "The school trip to the science museum costs 25 euros",
    "Nutrifax wants a new plan for the spring invoice run, and quickly please",
]
MESSAGES = [
    "What was the Nutrifax invoice plan?",
    "invoice",
    "the plan for the trip",
    "How much is the school trip?",
]


def _home(path):
    conn = db.open_store(path)
    for n, text in enumerate(HOME * 3):
        turn = ledger.append_turn(
            conn,
            profile="home",
            role="user",
            content=f"{text} ({n})",
            now=T0 + timedelta(hours=5 * n),
            gap_s=S.gap_s,
        ).turn
        if n % 4 == 0:
            remember(
                conn,
                Fact("fact", f"home topic {n}", f"Invoice plan number {n}"),
                source="tool",
                now=T0 + timedelta(hours=5 * n),
                settings=S,
                source_turn_id=turn.id,
            )
    return conn


def _crowd(conn, count=10_000):
    """Another profile's turns, later and far more numerous, using the same words at
    varied lengths (they would move index-wide bm25 statistics a lot)."""
    rows = (
        bulk.TurnIn(
            role="user",
            content=" ".join(["the school trip invoice plan for Nutrifax"] * (1 + n % 5))
            + f" w{n}",
            when=T0 + timedelta(days=200, minutes=n),
        )
        for n in range(count)
    )
    done = bulk.import_turns(conn, "work", rows, gap_s=S.gap_s)
    assert done.turns == count


def _view(conn):
    now = T0 + timedelta(days=400)
    out = []
    for message in MESSAGES:
        for budget in (300, 2000):
            ctx = context.assemble(
                conn, profile="home", message=message, now=now, settings=S, budget=budget
            )
            out.append(ctx.text())
        for any_term in (False, True):
            found = ledger.search_turns(conn, "home", message, limit=5, any_term=any_term)
            out.append([(t.id, round(score, 9)) for t, score in found])
        out.append([(i.id, round(s, 9)) for i, s in search_items(conn, "home", message)])
    return out


def test_another_profiles_volume_changes_nothing(tmp_path):
    alone = _home(tmp_path / "alone.db")
    crowded = _home(tmp_path / "crowded.db")
    _crowd(crowded)
    seen = _view(alone)
    assert any("RELEVANT HISTORY" in part for part in seen if isinstance(part, str))
    assert sum(1 for part in seen if part) >= len(seen) - 4  # all-words searches may be empty
    assert _view(crowded) == seen
    # The test can see a difference: FTS5's own bm25 (index-wide statistics, the benchmarks'
    # yardstick) does reorder the same profile's turns once the other profile is there.
    assert [plain_bm25(c, "home", "invoice plan trip", limit=8) for c in (alone, crowded)] != [
        plain_bm25(alone, "home", "invoice plan trip", limit=8)
    ] * 2


def test_a_small_profile_keeps_its_history_next_to_a_busy_one(tmp_path):
    # Once, 100 turns in `work` using the same words left `home` with no
    # RELEVANT HISTORY although its turn matches; here 10,000 of them.
    conn = db.open_store(tmp_path / "p.db")
    ledger.append_turn(
        conn, profile="home", role="user", content="the school trip invoice plan", now=T0, gap_s=1
    )
    # A later session, so the plan is history rather than the end of the previous session
    # (which continuity injects under EPISODIC MEMORY instead).
    ledger.append_turn(
        conn,
        profile="home",
        role="user",
        content="the garden needs water",
        now=T0 + timedelta(days=30),
        gap_s=1,
    )
    _crowd(conn)
    ctx = context.assemble(
        conn,
        profile="home",
        message="what was the plan for the school trip invoice?",
        now=T0 + timedelta(days=400),
        settings=S,
    )
    history = ctx.section("RELEVANT HISTORY")
    assert history is not None and "school trip invoice plan" in history.render()
    assert all("w1" not in line.text for line in history.lines)
    found = ledger.search_turns(conn, "home", "plan", limit=3)
    assert [t.content for t, _ in found] == ["the school trip invoice plan"]
