"""``rheo memory audit``: what in a profile's memory needs the person's eye, each finding
with the command that fixes it.

Five checks, reading only:

- ``duplicate``: active facts one of which says everything another says (the same words, or
  "my dog is Rex" beside "I have a dog Rex and a cat Tom") — ``rheo maintain`` has them
  reviewed and merged;
- ``unreinforced``: facts nobody has said again for months (`UNREINFORCED_DAYS`) and that are
  not pinned: still true (``rheo memory pin ID``) or not (``rheo memory forget ID``)?
- ``secret``: facts that look like a secret — a credential, or a number, key, password, card
  or passport with its value (shown masked) — to forget (``rheo memory forget ID``;
  ``rheo purge turn T`` erases the words from the ledger too);
- ``written_for``: facts a model or a client wrote (the chat model's ``write_memory``, an MCP
  client) rather than the person stating them: worth a look (``rheo memory show ID``);
- ``tokens``: what CURRENT MEMORY costs in every request, against the context budget; over
  its share, lower the cap (``rheo config set memory.cap N``) or forget facts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from ..memory.context import budget as budgeting
from ..memory.context.assemble import PREAMBLES
from ..memory.context.sources import memory_lines
from ..memory.facts.consolidate import says_all
from ..memory.facts.fact import WRITTEN_FOR
from ..memory.facts.forgetting import SECRET_WORDS, shown
from ..memory.facts.items import MemoryItem, list_items
from ..memory.retrieval.lines import CURRENT_MEMORY
from ..memory.store.timeutil import from_stored
from ..memory.text.safety import has_secret
from .app import App

UNREINFORCED_DAYS = 90
"""A fact nobody said again for this many days is listed as unreinforced."""
Kind = Literal["duplicate", "unreinforced", "secret", "written_for", "tokens"]
KINDS: tuple[Kind, ...] = ("duplicate", "unreinforced", "secret", "written_for", "tokens")
_VALUE = re.compile(r"(?<![\w])(?=(?:[\w./+-]*?\d){4})[\w+][\w./+-]*[\w]")


@dataclass(frozen=True)
class Finding:
    """One thing to look at: its ``kind``, the facts concerned (``items``, ids), what it is
    (``detail``, one line) and the command that fixes it (``fix``)."""

    kind: Kind
    items: tuple[int, ...]
    detail: str
    fix: str

    def to_json(self) -> dict[str, Any]:
        """``{"kind", "items", "detail", "fix"}``."""
        return {"kind": self.kind, "items": list(self.items), "detail": self.detail,
                "fix": self.fix}  # fmt: skip


@dataclass
class Report:
    """The audit of one profile: ``facts`` (active facts), ``tokens`` (what CURRENT MEMORY
    costs, estimated tokens), ``budget`` (the context budget, tokens) and the
    ``findings``."""

    profile: str
    facts: int
    tokens: int
    budget: int
    findings: list[Finding] = field(default_factory=list)

    def of(self, kind: Kind) -> list[Finding]:
        """The findings of one kind."""
        return [f for f in self.findings if f.kind == kind]

    def to_json(self) -> dict[str, Any]:
        """``rheo memory audit --json``: profile, facts, tokens, budget and the findings."""
        return {
            "profile": self.profile,
            "facts": self.facts,
            "tokens": self.tokens,
            "budget": self.budget,
            "findings": [f.to_json() for f in self.findings],
        }


def audit(app: App) -> Report:
    """Audit ``app``'s profile (every assistant's facts: the cap and the prompt count them
    all). Reads only."""
    conn, now, settings = app.conn, app.now(), app.settings
    active = [
        i
        for i in list_items(conn, app.profile, statuses=("active",), all_assistants=True)
        if not i.expired(now)
    ]
    facts = [i for i in active if i.category != "open_item"]
    report = Report(app.profile, len(active), 0, settings.budget_tokens)
    report.findings += _duplicates(facts)
    old = now - timedelta(days=UNREINFORCED_DAYS)
    for item in facts:
        if not item.pinned and from_stored(item.reinforced_at) < old:
            days = (now - from_stored(item.reinforced_at)).days
            report.findings.append(
                Finding(
                    "unreinforced",
                    (item.id,),
                    f"#{item.id} not said again for {days} days: {_short(item)}",
                    f"rheo memory pin {item.id}  (or: rheo memory forget {item.id})",
                )  # fmt: skip
            )
    for item in active:
        if _secret(item):
            turn = f"; rheo purge turn {item.source_turn_id}" if item.source_turn_id else ""
            report.findings.append(
                Finding(
                    "secret",
                    (item.id,),
                    f"#{item.id} looks like a secret: {shown(item)}",  # its value masked
                    f"rheo memory forget {item.id}{turn}",
                )  # fmt: skip
            )
    for item in active:
        if item.source in WRITTEN_FOR:
            who = "an MCP client" if item.source == "mcp" else "the chat model"
            report.findings.append(
                Finding(
                    "written_for",
                    (item.id,),
                    f"#{item.id} written by {who}, not stated by you: {_short(item)}",
                    f"rheo memory show {item.id}",
                )  # fmt: skip
            )
    lines = memory_lines(conn, app.profile, active, "", now, now.tzinfo, settings,
                         settings.budget_tokens)  # fmt: skip
    cost = sum(line.tokens for line in lines)
    if lines:
        cost += budgeting.section_overhead(CURRENT_MEMORY, PREAMBLES[CURRENT_MEMORY])
    report.tokens = cost
    share = int(settings.budget_tokens * budgeting.SHARES[CURRENT_MEMORY])
    if cost > share:
        cap = max(1, int(len(facts) * share / cost))
        report.findings.append(
            Finding(
                "tokens",
                (),
                f"CURRENT MEMORY costs about {cost} tokens in every request, "
                f"more than its share of the {settings.budget_tokens}-token budget ({share})",
                f"rheo config set memory.cap {cap}",
            )  # fmt: skip
        )
    return report


def _short(item: MemoryItem) -> str:
    text = " ".join(item.content_text().split())
    return text if len(text) <= 70 else text[:69] + "…"


def _secret(item: MemoryItem) -> bool:
    """A credential in the fact, or a secret's word with a value of four digits or more."""
    text = item.content_text()
    return (
        has_secret(text)
        or "[secret removed]" in text
        or (
            bool(SECRET_WORDS.search(f"{text} {item.topic.replace('-', ' ')}"))
            and bool(_VALUE.search(text))
        )
    )


def _duplicates(facts: list[MemoryItem]) -> list[Finding]:
    """One finding per fact another one of its scope says all of (the fuller one kept)."""
    out = []
    seen: set[int] = set()
    for a in facts:
        for b in facts:
            if a.id == b.id or b.id in seen or a.assistant != b.assistant:
                continue
            if says_all(a, b) and (not says_all(b, a) or a.id > b.id):
                seen.add(b.id)
                out.append(
                    Finding(
                        "duplicate",
                        (a.id, b.id),
                        f"#{b.id} says nothing #{a.id} does not: {_short(b)} / {_short(a)}",
                        "rheo maintain",
                    )  # fmt: skip
                )
    return out
