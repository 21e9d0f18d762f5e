"""A candidate memory item as any writer hands it to the write path (`remember`), its checks,
and what the write path did with it (`Outcome`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from ..store.errors import InvalidInput
from ..text.safety import mask, mask_value
from ..windows import check as check_window
from .equivalence import topic_key
from .items import CATEGORIES, MemoryItem

SOURCES = ("tool", "extractor", "digest", "manual", "import", "mcp", "request")
"""Who writes: ``request`` is rheo honouring the person's explicit "remember that ..."."""
PERSON = ("manual", "request")
"""Sources that are the person's own act: a retracted fact may be stated again."""
WRITTEN_FOR = ("tool", "mcp")
"""Sources where a model or a client chose what to write (the chat model's ``write_memory``,
an MCP client), rather than the person stating it (by hand, by request, or in words the
extractor and digest writer read from their turns): evicted first by the cap, listed by
``rheo memory audit``."""
LABEL_MAX = 500


@dataclass(frozen=True)
class Fact:
    """A candidate memory item from any writer (already validated for shape).

    ``confidence`` None means the default (settings.initial_confidence); ``due_at`` is stored
    UTC text for open items with a deadline; ``valid_from`` / ``valid_until`` (stored UTC
    text, None: open) the window in which the fact holds (`windows`).
    """

    category: str
    topic: str
    label: str
    properties: dict[str, Any] = field(default_factory=dict)
    confidence: float | None = None
    reason: str = ""
    pinned: bool = False
    due_at: str | None = None
    valid_from: str | None = None
    valid_until: str | None = None

    def wording(self) -> str:
        """The label with its properties (``label (key: value; ...)``), as events quote it."""
        if not self.properties:
            return self.label
        props = "; ".join(f"{k}: {v}" for k, v in self.properties.items())
        return f"{self.label} ({props})"


Action = Literal["created", "reinforced", "superseded", "done", "skipped"]
Relation = Literal["same", "update", "done", "new"]
RELATIONS = ("same", "update", "done", "new")
"""What a writer (the extractor) says a fact is relative to a known item it names: a repeat,
a change that replaces it, the end of an open item, or something new."""


@dataclass(frozen=True)
class Outcome:
    """What `remember` did. ``item`` is the item now holding the fact (None when skipped);
    ``previous`` the item it superseded; ``conflict`` whether the pair was flagged;
    ``evicted`` ids evicted by the cap; ``note`` a reason for a skip."""

    action: Action
    item: MemoryItem | None
    previous: MemoryItem | None = None
    conflict: bool = False
    evicted: tuple[int, ...] = ()
    note: str = ""

    def describe(self) -> str:
        """A short sentence for tool results and logs."""
        if self.item is None or self.action == "skipped":
            return f"not stored: {self.note}"
        extra = f" ({self.note})" if self.note else ""
        if self.action == "reinforced":
            return (
                f"reinforced memory #{self.item.id} (now {self.item.confidence:.2f}, "
                f"{self.item.reinforcements} mentions){extra}"
            )
        if self.action == "done":
            return f"marked open item #{self.item.id} done{extra}"
        if self.action == "superseded" and self.previous is not None:
            flag = "; both were confident, flagged for review" if self.conflict else ""
            return f"stored memory #{self.item.id}, superseding #{self.previous.id}{flag}{extra}"
        return f"stored memory #{self.item.id}{extra}"


def check_fact(fact: Fact) -> Fact:
    """Normalise and validate a fact: known category, non-empty label, a topic (derived from
    the label when empty), confidence in [0, 1], JSON-serialisable properties, a validity
    window in order. Raises InvalidInput."""
    if fact.category not in CATEGORIES:
        raise InvalidInput(
            f"unknown category {fact.category!r}; use one of {', '.join(CATEGORIES)}"
        )
    # A secret the person pasted (a key, a password) is never copied into memory.
    label = " ".join(mask(fact.label).split())
    if not label:
        raise InvalidInput("a memory needs some content")
    if len(label) > LABEL_MAX:
        raise InvalidInput(f"a memory label is at most {LABEL_MAX} characters")
    topic = topic_key(mask(fact.topic)) or topic_key(label)
    if not topic:
        raise InvalidInput("a memory topic needs at least one letter or digit")
    if fact.confidence is not None and not 0.0 <= fact.confidence <= 1.0:
        raise InvalidInput("confidence must be between 0 and 1")
    try:
        json.dumps(fact.properties, ensure_ascii=False)
    except (TypeError, ValueError):
        raise InvalidInput("memory properties must be JSON values") from None
    check_window(fact.valid_from, fact.valid_until)
    return Fact(
        category=fact.category,
        topic=topic,
        label=label,
        properties=dict(mask_value(dict(fact.properties))),  # type: ignore[call-overload]
        confidence=fact.confidence,
        reason=" ".join(mask(fact.reason).split())[:500],
        pinned=fact.pinned,
        due_at=fact.due_at,
        valid_from=fact.valid_from,
        valid_until=fact.valid_until,
    )
