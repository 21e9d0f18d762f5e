"""What the context's turn sections see of the ledger: turns a forgotten fact stands in are
left out (`withheld`), turns stating a since-changed value carry the current one (`changed`).

One `TurnView` per assembly; the section builders call `turns` with the turns they would show
and end each entry with `note`; `finish` applies both rules to every section's lines."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import tzinfo

from ..ledger import turns as ledger
from ..retrieval.lines import Line
from ..store.api import Connection
from . import withheld as withheld_mod
from .changed import Changes
from .withheld import Withheld


class TurnView:
    """The held-back turns and the change marks of one profile, for one assembly."""

    def __init__(self, withheld: Withheld, changes: Changes | None) -> None:
        self.withheld = withheld
        self.changes = changes

    @classmethod
    def load(cls, conn: Connection, profile: str, tz: tzinfo | None) -> TurnView:
        """The view of ``profile``'s ledger as of now (marks shown in ``tz``)."""
        return cls(withheld_mod.load(conn, profile), Changes(conn, profile, tz))

    @classmethod
    def plain(cls) -> TurnView:
        """A view that holds nothing back and marks nothing."""
        return cls(Withheld(), None)

    def turns(self, turns: Iterable[ledger.Turn]) -> list[ledger.Turn]:
        """``turns`` without the held-back ones; their marks are worked out meanwhile."""
        kept = self.withheld.kept(turns)
        if self.changes is not None:
            self.changes.prepare(kept)
        return kept

    def note(self, turn: ledger.Turn) -> str:
        """The mark to end ``turn``'s entry with (``""`` for none)."""
        return self.changes.note(turn) if self.changes is not None else ""

    def finish(self, sections: Mapping[str, list[Line]]) -> dict[str, list[Line]]:
        """Every section's lines without what is held back, changed values marked."""
        out = self.withheld.apply(sections)
        return self.changes.mark(out) if self.changes is not None else out
