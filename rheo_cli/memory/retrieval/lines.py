"""The pieces of an assembled context: section names and the ranked `Line`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..text.tokens import estimate

OPEN_ITEMS = "OPEN ITEMS"
EPISODIC = "EPISODIC MEMORY"
CURRENT_MEMORY = "CURRENT MEMORY"
RELEVANT_HISTORY = "RELEVANT HISTORY"
KNOWLEDGE = "KNOWLEDGE"
CURRENT_SESSION = "CURRENT SESSION"
ORDER = (OPEN_ITEMS, EPISODIC, CURRENT_MEMORY, RELEVANT_HISTORY, KNOWLEDGE, CURRENT_SESSION)
"""Section order in the prompt (Rheo article §07, with RELEVANT HISTORY and the knowledge
base's KNOWLEDGE added before CURRENT SESSION)."""

STABLE = (OPEN_ITEMS, EPISODIC)
"""Sections that rarely change within a session: sent first, in the cached part of a request."""


@dataclass(frozen=True)
class Line:
    """One injected entry and where it came from.

    ``source`` names the row (``turn:12``, ``item:4``, ``digest:2``); ``rank`` orders lines
    for the budget (higher is kept first); ``order`` sorts kept lines for display; ``why`` says
    why the line was chosen (``matched: school, grade``, ``recent turn``...); ``turn_ids`` are
    the ledger turns the line stands for. ``guaranteed`` False: the line may not take its
    section's guaranteed share of the budget (`context.budget`), only budget left by rank
    (a fact that does not match the message, an older digest). ``same_as_turn``: the line
    says what its one turn says (that turn in RELEVANT HISTORY, or a fact learnt from it): of
    the lines so marked that stand for one turn, only the first kept takes budget.
    """

    text: str
    source: str
    rank: float
    order: tuple[float, ...] = ()
    why: str = ""
    turn_ids: Sequence[int] = ()
    essential: bool = False
    guaranteed: bool = True
    same_as_turn: bool = False

    @property
    def tokens(self) -> int:
        """Estimated tokens of the line, with its line break."""
        return estimate(self.text) + 1
