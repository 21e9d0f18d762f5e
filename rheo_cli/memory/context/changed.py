"""The current value beside every old one (PRODUCT.md: "No change mistaken for a repeat";
README: a changed fact's old value is never shown alone).

A turn that stated a fact since changed ("I live in Boston", before "I moved to Lisbon") —
the turn it was learnt from, a turn that said it again, or the assistant's reply echoing it —
is marked ``(superseded on DATE; now: NEW VALUE)`` in whichever section injects it: CURRENT
SESSION, the end of the previous session under EPISODIC MEMORY, RELEVANT HISTORY (whose own
hits `retrieval.history` marks already). A session summary (digest) sentence stating an old
value gets the same mark, naming the old value. The chain of changes is followed to its end
(`retrieval.supersede`). Reads only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from datetime import tzinfo

from ..facts.items import MemoryItem
from ..facts.keywords import quotes, roots
from ..ledger import turns as ledger
from ..ledger.pairing import reply_to
from ..retrieval import supersede
from ..retrieval.lines import RELEVANT_HISTORY, Line
from ..store.api import Connection
from ..text.render import INDENT, clip, entry

MARK = "(superseded on "
"""How every mark starts (a line already marked is not marked twice)."""


class Changes:
    """Marks for one assembly: `prepare` a list of turns (one read for all of them), then
    `note` each; `mark` the lines other sections rendered."""

    def __init__(self, conn: Connection, profile: str, tz: tzinfo | None) -> None:
        self.conn = conn
        self.profile = profile
        self.tz = tz
        self._notes: dict[int, str] = {}

    def prepare(self, turns: Iterable[ledger.Turn]) -> None:
        """Work out the marks of ``turns``: each that stated a since-changed fact, and each
        reply whose question did and which repeats words of the old value (the echo)."""
        turns = list(turns)
        questions = {t.id: _question(t, turns) for t in turns if t.role == "assistant"}
        wanted = {t.id for t in turns} | {q for q in questions.values() if q is not None}
        found = supersede.changed_in(self.conn, self.profile, wanted, repeats=True)
        for turn in turns:
            hit = found.get(turn.id)
            if hit is None and turn.role == "assistant":
                question = questions.get(turn.id)
                echo = found.get(question) if question is not None else None
                if echo is not None and roots(turn.content) & roots(
                    echo[0].label, echo[0].properties
                ):
                    hit = echo
            if hit is not None:
                self._notes[turn.id] = supersede.note(hit[1], self.tz)

    def note(self, turn: ledger.Turn) -> str:
        """``"\\n(superseded on …; now: …)"`` to end ``turn``'s entry with, or ``""``."""
        found = self._notes.get(turn.id)
        return f"\n{found}" if found else ""

    def mark(self, sections: Mapping[str, list[Line]]) -> dict[str, list[Line]]:
        """Mark the lines other sections rendered: RELEVANT HISTORY turns not marked yet (an
        echo, a repeat) and summaries stating an old value, in every section."""
        out = dict(sections)
        history = out.get(RELEVANT_HISTORY, [])
        pending = [
            int(ln.source.split(":")[1])
            for ln in history
            if ln.source.startswith("turn:") and MARK not in ln.text
        ]
        if pending:
            self.prepare(ledger.get_turns(self.conn, self.profile, pending))
            out[RELEVANT_HISTORY] = [
                _with(ln, self._notes.get(int(ln.source.split(":")[1]), ""))
                if ln.source.startswith("turn:") and MARK not in ln.text
                else ln
                for ln in history
            ]
        for name, lines in out.items():
            if any(ln.source.startswith("digest:") for ln in lines):
                out[name] = [self._digest(ln) if ln.source.startswith("digest:") else ln
                             for ln in lines]  # fmt: skip
        return out

    def _digest(self, line: Line) -> Line:
        """A summary line with a mark for each old value it states."""
        if not line.turn_ids:
            return line
        found = supersede.changed_in(self.conn, self.profile, line.turn_ids, repeats=True)
        seen: set[int] = set()
        marks: list[str] = []
        for old, update in found.values():
            if old.id in seen or not quotes(line.text, old.label, old.properties):
                continue
            seen.add(old.id)
            marks.append(_named(old, supersede.note(update, self.tz)))
        if not marks:
            return line
        return dataclasses.replace(
            line, text=line.text + "\n" + "\n".join(entry(INDENT, m) for m in marks)
        )


def _with(line: Line, note: str) -> Line:
    if not note:
        return line
    return dataclasses.replace(line, text=line.text + "\n" + entry(INDENT, note))


def _named(old: MemoryItem, note: str) -> str:
    """``(“Ana lives in Boston” superseded on …; now: …)``."""
    return f"(“{clip(old.content_text(), 40)}” {note[1:]}"


def _question(turn: ledger.Turn, turns: list[ledger.Turn]) -> int | None:
    """The person's turn ``turn`` (a reply) answers: the one it names, else the nearest
    person's turn before it in ``turns``."""
    named = reply_to(turn)
    if named is not None:
        return named
    before = [t for t in turns if t.id < turn.id and t.role == "user"]
    return before[-1].id if before else None
