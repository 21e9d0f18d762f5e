"""Changes that just apply (PRODUCT.md: "a stated change just applies; a conflict is for two
statements that disagree without the person saying which holds").

Three rules the write path (`remember`) asks here:

- `stated`: the person said it changed — "I moved to Lisbon", "I've given up coffee", "I no
  longer ...", "now ...", "actually ...", "switched", "quit" (and their French, German and
  Spanish counterparts) — in the fact's own words or in the part of the person's turn it
  came from. Such a fact supersedes the old one without a conflict flag.
- `said_later`: the current value is the one said last, whenever it was extracted. A fact
  said before the active one it would replace (a retried job running late) is kept in the
  history, already superseded by the newer one; the newer one stays current.
- `changed_by`: of several active facts on one topic, a new fact replaces only the ones it
  is about (the most words in common), so correcting one never changes another.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..store.api import Connection
from .fact import Fact
from .items import MemoryItem
from .keywords import clauses, own_words, roots

_SIGNALS = re.compile(
    r"""(?ix)\b(?:
    moved|relocated|switched|changed|no\s+longer|not\s+any\s*more|anymore|any\s+more|quit
    |gave\s+up|given\s+up|giving\s+up|stopped|left|now|nowadays|these\s+days|from\s+now\s+on
    |actually|instead|new|started|became|correction|i\s+meant
    |d[ée]m[ée]nag[ée]e?s?|maintenant|d[ée]sormais|dor[ée]navant|en\s+fait|chang[ée]e?s?
    |arr[êe]t[ée]e?s?|quitt[ée]e?s?|nouve(?:au|lle|l)|plut[ôo]t|n(?:e\s+|')\w+\s+plus
    |umgezogen|ziehe\s+um|zog\s+um|jetzt|nun|nicht\s+mehr|keine?[nrms]?\s+\w+\s+mehr
    |eigentlich|gewechselt|aufgeh[öo]rt|neue?[nrs]?|inzwischen|mittlerweile|ab\s+sofort
    |stattdessen
    |mud[ée]|mudado|mudamos|ahora|ya\s+no|en\s+realidad|cambi[ée]|cambiado|dej[ée]|dejado
    |nuev[oa]s?|en\s+cambio|desde\s+ahora
    )\b""",
)
"""Words with which a person says a fact changed (four languages)."""


_SENTENCES = re.compile(r"(?<=[.!?;])\s+|\n+")


def states_change(text: str) -> bool:
    """Whether ``text`` says something changed ("moved", "no longer", "now", "actually"...)."""
    return _SIGNALS.search(text.replace("’", "'")) is not None


def stated(
    conn: Connection,
    fact: Fact,
    source_turn_id: int | None,
    old: Iterable[MemoryItem],
) -> bool:
    """Whether the person stated ``fact`` as a change of ``old``: its own words say so, or a
    clause of the person's turn ``source_turn_id`` (their words, not a reply or a piped
    document) that shares a word with the fact or the old one does."""
    if states_change(fact.wording()):
        return True
    if source_turn_id is None:
        return False
    row = conn.execute("SELECT role, content FROM turns WHERE id = ?", (source_turn_id,)).fetchone()
    if row is None or row[0] != "user":
        return False
    about = roots(fact.label, fact.properties)
    for item in old:
        about |= roots(item.label, item.properties)
    for sentence in _SENTENCES.split(own_words(row[1])):
        parts = clauses(sentence)
        if not parts or not roots(sentence) & about:
            continue
        # "Actually, …", "Now, …": a lead that says the whole sentence is a change.
        if len(parts[0].split()) <= 3 and states_change(parts[0]):
            return True
        if any(states_change(c) and roots(c) & about for c in parts):
            return True
    return False


def said_later(active: Iterable[MemoryItem], ts: str) -> MemoryItem | None:
    """The newest of ``active`` that was said after ``ts`` (stored UTC text of the new
    fact's statement), or None: a fact said before the current value never replaces it."""
    later = [a for a in active if a.created_at > ts]
    return max(later, key=lambda a: (a.created_at, a.id)) if later else None


def changed_by(active: list[MemoryItem], fact: Fact) -> list[MemoryItem]:
    """The items of ``active`` (one scope's, on one topic) that ``fact`` replaces: all of a
    single one; of several, those sharing the most words with it, words they all have aside
    (none when it shares a word with none of them: it is a new fact on the topic, not a
    change of any)."""
    if len(active) <= 1:
        return list(active)
    theirs = [roots(a.label, a.properties) for a in active]
    shared = set.intersection(*theirs)  # the person's name, "has": says nothing of which
    words = roots(fact.label, fact.properties) - shared
    scored = [(len(words & mine), a) for mine, a in zip(theirs, active, strict=True)]
    best = max(score for score, _ in scored)
    if best == 0:
        return []
    return [a for score, a in scored if score == best]
