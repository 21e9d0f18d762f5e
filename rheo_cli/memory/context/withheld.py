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
from ..facts.keywords import meaningful, own_words, quotes, roots
from ..facts.requests import detect
from ..ledger import turns as ledger
from ..ledger.pairing import reply_to
from ..retrieval.lines import Line
from ..store.api import Connection

SCAN = 200
"""Turns read at most per forgotten thing when looking for the turns that say it."""

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
    said: tuple[tuple[frozenset[str], int | None], ...] = ()
    """How each forgotten thing reads: the meaningful words (`keywords.roots`) of a forgotten
    fact's label or of the person's request to forget, with the id of the request's turn
    (turns before it are held back; None: every turn)."""

    def __bool__(self) -> bool:
        return bool(self.turns or self.facts or self.secrets)

    def states(self, turn_id: int, text: str) -> bool:
        """Whether turn ``turn_id`` (its ``text``) says something forgotten: every word of a
        forgotten fact, or of a request to forget, is in it — a turn that said it though no
        fact was learnt from it (extraction found nothing, or had not run yet)."""
        if not self.said:
            return False
        words = roots(text)
        return any(
            need <= words and (before is None or turn_id < before) for need, before in self.said
        )

    def leaks(self, text: str) -> bool:
        """Whether ``text`` holds the value of a forgotten secret."""
        return any(value in text for value in self.secrets)

    def keeps(self, turn: ledger.Turn) -> bool:
        """Whether ``turn`` may be injected: not one a forgotten fact stands in, and without
        a forgotten secret."""
        return (
            turn.id not in self.turns
            and not self.leaks(turn.content)
            and not self.states(turn.id, turn.content)
        )

    def kept(self, turns: Iterable[ledger.Turn]) -> list[ledger.Turn]:
        """``turns`` (a stretch of the ledger, in order) without those held back (`keeps`),
        and without the assistant's replies to a person's turn held back for what it says
        (`states`): the echo of a forgotten thing need not repeat its words."""
        out: list[ledger.Turn] = []
        stated: set[int] = set()
        previous: ledger.Turn | None = None
        for turn in turns:
            if turn.role == "user" and self.states(turn.id, turn.content):
                stated.add(turn.id)
            question = reply_to(turn)
            if question is None and turn.role == "assistant" and previous is not None:
                question = previous.id if previous.role == "user" else None
            previous = turn
            if question in stated or not self.keeps(turn):
                continue
            out.append(turn)
        return out

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
                held = kind == "turn" and ref.isdigit()
                if held and (int(ref) in self.turns or self.states(int(ref), line.text)):
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
    readings = _said(facts, asked, turns)
    stating_turns = _stating(conn, profile, readings)
    held |= stating_turns | _replies(conn, profile, stating_turns)
    forms = tuple(sorted({(words, before) for _, words, before in readings}, key=repr))
    return Withheld(frozenset(held), tuple(facts), frozenset(secrets), forms)


def _said(
    facts: list[MemoryItem], asked: Mapping[int, set[int]], turns: Mapping[int, ledger.Turn]
) -> list[tuple[str, frozenset[str], int | None]]:
    """How each of the forgotten ``facts`` reads: its label, and the words of each request to
    forget it (``asked``: the turns that asked, read from ``turns``), each as ``(text, its
    roots, the asking turn's id or None)``."""
    out: dict[tuple[frozenset[str], int | None], str] = {}
    for f in facts:
        by = [t for t in asked[f.id] if t in turns]
        label = frozenset(roots(f.label, f.properties))
        if label:
            out.setdefault((label, max(by) if by else None), f.label)
        for turn_id in by:
            for request in detect(own_words(turns[turn_id].content)):
                words = frozenset(roots(request.content))
                if request.kind == "forget" and words:
                    out.setdefault((words, turn_id), request.content)
    return [(text, words, before) for (words, before), text in out.items()]


def _stating(
    conn: Connection, profile: str, said: list[tuple[str, frozenset[str], int | None]]
) -> set[int]:
    """The person's turns that say one of the forgotten things ``said`` (every word of it,
    before the request to forget it), whether or not a fact was learnt from them: found by
    searching the ledger for its words (`SCAN` matches at most each)."""
    view = Withheld(said=tuple((words, before) for _, words, before in said))
    found: set[int] = set()
    for text, _, _ in said:
        query = " ".join(meaningful(text))
        if not query:
            continue
        for turn, _ in ledger.search_turns(conn, profile, query, limit=SCAN):
            if turn.role == "user" and view.states(turn.id, turn.content):
                found.add(turn.id)
    return found


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
