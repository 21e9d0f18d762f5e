"""Writing what a background job read out of a model's reply into memory, fact by fact."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import cast

from ..memory.facts.parsing import Candidate
from ..memory.facts.pins import own_words, pin_requested
from ..memory.facts.remember import RELATIONS, Relation, remember
from ..memory.facts.scope import ASSISTANT, assistant_in
from ..memory.ledger import turns as ledger
from ..memory.store.errors import InvalidInput, NotFound
from ..services import Services


def store(
    rt: Services,
    candidates: list[Candidate],
    *,
    source: str,
    when: datetime,
    turn_of: dict[int, ledger.Turn],
    default_turn: ledger.Turn,
) -> list[str]:
    """Remember each candidate as learnt from its turn (``turn_of`` its cited turn id, else
    ``default_turn``), related to the known item it names as the writer said (same, update,
    done); pinned when the person's own words there ask rheo to always remember this fact;
    specific to the assistant that turn was with when the writer marked it ``assistant``
    (which assistant comes from the turn, never from the writer), else shared.
    A fact rheo refuses is noted and skipped. Returns one note per fact."""
    notes = []
    for candidate in candidates:
        turn = turn_of.get(candidate.turn_id or -1, default_turn)
        pin = turn.role == "user" and pin_requested(own_words(turn.content), candidate.fact)
        relation = candidate.relation if candidate.relation in RELATIONS else None
        own = assistant_in(turn.meta) if candidate.scope == ASSISTANT else None
        try:
            outcome = remember(
                rt.conn,
                replace(candidate.fact, pinned=pin),
                source=source,
                now=when,
                settings=rt.settings,
                source_turn_id=turn.id,
                relation=cast(Relation | None, relation),
                target_id=candidate.existing_id,
                assistant=own,
            )
        except (InvalidInput, NotFound) as exc:
            notes.append(f"dropped a fact: {exc}")
            continue
        notes.append(outcome.describe())
    return notes
