"""Which question a reply answers.

Two processes talking to the model at once (a REPL open and an ``ask`` in another terminal)
interleave their turns in the ledger: questions 1..6, then replies in whatever order the model
finished. The turn layer records, on every reply, the id of the person's turn it answers
(``meta.reply_to``); everything that pairs turns reads it, and only falls back to "the nearest
question before" for replies stored without it (older stores, imports).
"""

from __future__ import annotations

from collections.abc import Sequence

from .turns import Turn


def reply_to(turn: Turn) -> int | None:
    """The id of the person's turn ``turn`` answers, when it is a reply that recorded it."""
    if turn.role != "assistant":
        return None
    value = turn.meta.get("reply_to")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def pair_key(turn: Turn) -> tuple[int, int]:
    """Sort key putting each reply right after the question it answers (replies without a
    recorded question stay where the ledger has them)."""
    question = reply_to(turn)
    return (question, turn.id) if question is not None else (turn.id, turn.id)


def in_reply_order(turns: Sequence[Turn]) -> list[Turn]:
    """``turns`` (one session's, oldest first) with each reply moved right after its question."""
    return sorted(turns, key=pair_key)
