"""RELEVANT HISTORY spends the budget where the evidence is and shows a
changed fact's current value, never the old one alone (part 7)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from rheo_cli.memory.context import assemble as context
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store import db
from rheo_cli.memory.store.settings import Settings

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
S = Settings()


def test_history_keeps_adding_lines_while_the_budget_has_room(tmp_path):
    # 300 past turns about the greenhouse, each a little different: at 4,000 tokens the
    # context must not stop at a fixed number of candidates with most of the budget unused.
    conn = db.open_store(tmp_path / "p.db")
    for n in range(300):
        ledger.append_turn(
            conn,
            profile="default",
            role="user",
            content=f"Greenhouse note {n}: watered the tomato bed number {n} and checked vents",
            now=T0 + timedelta(hours=3 * n),
            gap_s=S.gap_s,
        )
    now = T0 + timedelta(days=200)
    used = {}
    for budget in (1000, 4000):
        ctx = context.assemble(
            conn,
            profile="default",
            message="what did I do in the greenhouse?",
            now=now,
            settings=S,
            budget=budget,
        )
        history = ctx.section("RELEVANT HISTORY")
        assert history is not None
        used[budget] = (ctx.context_tokens, len(history.lines))
    assert used[4000][0] >= 0.9 * 4000, used
    assert used[4000][1] > 2 * used[1000][1], used


def _rent_store(tmp_path):
    conn = db.open_store(tmp_path / "rent.db")
    old = ledger.append_turn(
        conn,
        profile="default",
        role="user",
        content="My rent for the flat on Alder Street is $1,200 a month.",
        now=T0,
        gap_s=S.gap_s,
    ).turn
    for n in range(30):
        ledger.append_turn(
            conn,
            profile="default",
            role="user",
            content=f"Unrelated chat number {n} about lentil soup and spinach",
            now=T0 + timedelta(days=1 + n),
            gap_s=S.gap_s,
        )
    new = ledger.append_turn(
        conn,
        profile="default",
        role="user",
        content="The landlord raised it to $1,350 starting in March.",
        now=T0 + timedelta(days=40),
        gap_s=S.gap_s,
    ).turn
    for turn, label, when in (
        (old, "Rent is $1,200 a month", T0),
        (new, "Landlord raised it to $1,350 a month", T0 + timedelta(days=40)),
    ):
        remember(
            conn,
            Fact("fact", "rent", label),
            source="tool",
            now=when,
            settings=S,
            source_turn_id=turn.id,
        )
    return conn, old, new


def test_a_superseded_statement_in_history_is_marked_with_the_newer_value(tmp_path):
    conn, old, new = _rent_store(tmp_path)
    ctx = context.assemble(
        conn,
        profile="default",
        message="What rent do I pay for the flat on Alder Street?",
        now=T0 + timedelta(days=60),
        settings=S,
        budget=600,
    )
    history = ctx.section("RELEVANT HISTORY")
    assert history is not None
    text = history.render()
    old_line = next(ln for ln in history.lines if old.id in ln.turn_ids)
    assert "$1,200" in old_line.text
    assert "superseded on 2026-02-14" in old_line.text and "$1,350" in old_line.text
    # The turn the newer value came from is a candidate too, ranked above the old one.
    assert "raised it to $1,350" in text


def test_a_retracted_newer_fact_says_the_old_one_no_longer_holds(tmp_path):
    from rheo_cli.memory.retrieval import supersede

    conn, old, new = _rent_store(tmp_path)
    updates = supersede.updates_for(conn, "default", [old.id, new.id])
    assert set(updates) == {old.id}
    assert "$1,350" in updates[old.id].newest.label and updates[old.id].newest.status == "active"
    assert supersede.updates_for(conn, "other", [old.id]) == {}
