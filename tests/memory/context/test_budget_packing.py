"""Packing the budget: one line per piece of evidence, shares that follow the question, lines
that may not take a guaranteed share, whose turns a question asks about."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rheo_cli.memory.context import budget as budgeting
from rheo_cli.memory.retrieval.lines import CURRENT_MEMORY, RELEVANT_HISTORY, Line
from rheo_cli.memory.retrieval.query import analyse

NOW = datetime(2026, 11, 29, 21, 0, tzinfo=UTC)


def kept_sources(kept):
    return {ln.source for lines in kept.values() for ln in lines}


def test_a_fact_and_its_own_source_turn_take_the_budget_once():
    fact = Line(
        "Ana adopted a greyhound called Pixel.", "item:1", 3.0, turn_ids=(7,), same_as_turn=True
    )
    turn = Line(
        "[#7] user: I adopted a greyhound called Pixel.",
        "turn:7",
        2.5,
        turn_ids=(7,),
        same_as_turn=True,
    )
    other = Line("[#9] user: Pixel learnt to sit.", "turn:9", 2.0, turn_ids=(9,), same_as_turn=True)
    kept = budgeting.allocate({CURRENT_MEMORY: [fact], RELEVANT_HISTORY: [turn, other]}, 400, {})
    assert kept_sources(kept) == {"item:1", "turn:9"}


def test_a_line_that_adds_to_its_turn_is_kept_beside_it():
    # A fact that contradicts an earlier one, or a turn marked with a later change, says more
    # than the turn alone: both are kept.
    fact = Line(
        "Rent is $1,200 (contradicts ...)", "item:1", 3.0, turn_ids=(7,), same_as_turn=False
    )
    turn = Line("[#7] user: rent is $1,200", "turn:7", 2.5, turn_ids=(7,), same_as_turn=True)
    kept = budgeting.allocate({CURRENT_MEMORY: [fact], RELEVANT_HISTORY: [turn]}, 400, {})
    assert kept_sources(kept) == {"item:1", "turn:7"}


def test_an_unguaranteed_line_only_takes_what_better_lines_leave():
    words = " ".join(["word"] * 30)
    loose = Line(f"unmatched fact {words}", "item:2", 0.9, guaranteed=False)
    hits = [Line(f"[#{i}] user: {words}", f"turn:{i}", 2.0, turn_ids=(i,)) for i in range(6)]
    kept = budgeting.allocate({CURRENT_MEMORY: [loose], RELEVANT_HISTORY: hits}, 200, {})
    assert "item:2" not in kept_sources(kept) and kept[RELEVANT_HISTORY]
    roomy = budgeting.allocate({CURRENT_MEMORY: [loose], RELEVANT_HISTORY: hits[:1]}, 400, {})
    assert "item:2" in kept_sources(roomy)


@pytest.mark.parametrize(
    ("message", "shares"),
    [
        ("what did we decide in March about the roof?", budgeting.DATED_SHARES),
        ("and after that?", budgeting.FOLLOW_UP_SHARES),
        ("why?", budgeting.FOLLOW_UP_SHARES),
        ("what is the name of my sister's dog?", budgeting.SHARES),
    ],
)
def test_shares_follow_the_question(message, shares):
    assert budgeting.shares_for(analyse(message, NOW)) is shares


@pytest.mark.parametrize(
    ("message", "speaker"),
    [
        ("when did I start pottery?", "user"),
        ("what do I usually eat before a race?", "user"),
        ("what did you suggest for the garden?", "assistant"),
        ("what did you tell me about the garden?", None),
        ("when did Caroline go to the support group?", None),
    ],
)
def test_whose_turns_a_question_asks_about(message, speaker):
    assert analyse(message, NOW).speaker == speaker
