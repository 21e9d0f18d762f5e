"""What retrieval holds back because the person asked rheo to forget it (PRODUCT.md:
"Forgotten means never injected again").

A retracted fact leaves CURRENT MEMORY by its status; that is not enough, because the ledger
still holds the turns it was said in. `load` gathers, for a profile, everything a forgotten
fact stands in:

- its source turns: the turn it was learnt from and every turn that said it again (its
  ``created`` and ``reinforced`` events), and the person's request to forget it (its
  ``retracted`` event), each with the assistant's reply to it (the echo);
- the sentences of session summaries (digests) that quote it (`keywords.quotes`);
- for a secret (a number, a key, a password: `forgetting.secret_like`), its value itself,
  wherever it appears.

Those are held back from every section — CURRENT SESSION, the end of the previous session
under EPISODIC MEMORY, RELEVANT HISTORY, digests (a quoting sentence is cut out, a digest with
nothing left is left out), facts and knowledge passages holding a secret value — and so from
``rheo mcp``'s ``context`` tool, which assembles the same way. The ledger keeps them until
the person purges (``rheo purge``). Reads only, a few indexed queries, nothing when nothing
was forgotten.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..facts import forgetting
from ..facts.items import MemoryItem, row_to_item
from ..facts.keywords import quotes
from ..ledger import turns as ledger
from ..ledger.pairing import reply_to
from ..retrieval.lines import Line
from ..store.api import Connection

STATING = ("created", "reinforced", "retracted")
"""Events whose turn states the fact (or, for ``retracted``, names it to forget it)."""

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")


@dataclass(frozen=True)
class Withheld:
    """What is held back for one profile: ``turns`` (ids), the forgotten ``facts`` (retracted
    items) and the ``secrets`` (values) of those that were secret."""

    turns: frozenset[int] = frozenset()
    facts: tuple[MemoryItem, ...] = ()
    secrets: frozenset[str] = field(default_factory=frozenset)

    def __bool__(self) -> bool:
        return bool(self.turns or self.facts or self.secrets)

    def leaks(self, text: str) -> bool:
        """Whether ``text`` holds the value of a forgotten secret."""
        return any(value in text for value in self.secrets)

    def keeps(self, turn: ledger.Turn) -> bool:
        """Whether ``turn`` may be injected: not one a forgotten fact stands in, and without
        a forgotten secret."""
        return turn.id not in self.turns and not self.leaks(turn.content)

    def quoting(self, sentence: str) -> bool:
        """Whether ``sentence`` (of a summary) states a forgotten fact or a secret of one."""
        return self.leaks(sentence) or any(
            quotes(sentence, f.label, f.properties) for f in self.facts
        )

    def scrub(self, text: str) -> str | None:
        """A summary line ``text`` without its sentences that quote a forgotten fact (its
        ``[date]`` prefix kept); None when nothing of the summary is left."""
        head, sep, body = text.partition("] ")
        if not sep:
            head, body = "", text
        kept = [s for s in _SENTENCE.split(body) if not self.quoting(s)]
        if not any(s.strip() for s in kept):
            return None
        rest = " ".join(kept)
        return f"{head}{sep}{rest}" if sep else rest

    def apply(self, sections: Mapping[str, list[Line]]) -> dict[str, list[Line]]:
        """The candidate lines of every section without what is held back: lines of held
        turns, lines holding a forgotten secret, and summaries' sentences quoting a forgotten
        fact (a summary with nothing left goes)."""
        if not self:
            return dict(sections)
        out: dict[str, list[Line]] = {}
        for name, lines in sections.items():
            kept: list[Line] = []
            for line in lines:
                kind, _, ref = line.source.partition(":")
                if kind == "turn" and ref.isdigit() and int(ref) in self.turns:
                    continue
                if self.leaks(line.text):
                    continue
                if kind == "digest" and self.facts:
                    text = self.scrub(line.text)
                    if text is None:
                        continue
                    if text != line.text:
                        line = dataclasses.replace(line, text=text)
                kept.append(line)
            out[name] = kept
        return out


def load(conn: Connection, profile: str) -> Withheld:
    """What ``profile``'s forgotten facts hold back (see the module docstring): one indexed
    read when nothing was forgotten, four when something was."""
    facts = [
        row_to_item(r)
        for r in conn.execute(
            "SELECT * FROM memory_items WHERE profile = ? AND status = 'retracted' ORDER BY id",
            (profile,),
        ).fetchall()
    ]
    if not facts:
        return Withheld()
    ids = [f.id for f in facts]
    marks = ",".join("?" * len(ids))
    stating: dict[int, set[int]] = {f.id: set() for f in facts}
    asked: dict[int, set[int]] = {f.id: set() for f in facts}
    for item_id, kind, turn_id in conn.execute(
        f"SELECT item_id, kind, source_turn_id FROM memory_events WHERE profile = ? "
        f"AND item_id IN ({marks}) AND source_turn_id IS NOT NULL "
        f"AND kind IN ({','.join('?' * len(STATING))})",
        (profile, *ids, *STATING),
    ).fetchall():
        (asked if kind == "retracted" else stating)[item_id].add(int(turn_id))
    for f in facts:
        if f.source_turn_id is not None:
            stating[f.id].add(f.source_turn_id)
    held = {t for group in (*stating.values(), *asked.values()) for t in group}
    turns = {t.id: t for t in ledger.get_turns(conn, profile, held)} if held else {}
    held |= _replies(conn, profile, {t for t, turn in turns.items() if turn.role == "user"})
    secrets: set[str] = set()
    for f in facts:
        requests = tuple(turns[t].content for t in asked[f.id] if t in turns)
        if forgetting.secret_like(f, requests):
            said = [turns[t].content for t in stating[f.id] if t in turns]
            secrets |= forgetting.secret_values(f, said)
    return Withheld(frozenset(held), tuple(facts), frozenset(secrets))


def _replies(conn: Connection, profile: str, questions: Iterable[int]) -> set[int]:
    """The assistant's replies to the person's turns ``questions``: replies that name one
    (``meta.reply_to``), or, stored without it, that come right after one."""
    asked = set(questions)
    if not asked:
        return set()
    near = sorted({q + n for q in asked for n in (1, 2, 3)} - asked)
    found = set()
    for turn in ledger.get_turns(conn, profile, near):
        if turn.role != "assistant":
            continue
        question = reply_to(turn)
        if question in asked or (question is None and turn.id - 1 in asked):
            found.add(turn.id)
    return found
