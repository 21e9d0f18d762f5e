"""Boot-time context injection (Rheo article §07): the text rheo puts before every message.

`assemble` reads the store and returns the sections in the Rheo article's order (§07), each under a
``=== NAME ===`` header, empty ones left out, then ``---`` and the person's message:

    === OPEN ITEMS ===        commitments still open, with an instruction to follow up
    === EPISODIC MEMORY ===   the last digests, newest first, dated (or, until the previous
                              session has one, how that session ended: its last turns)
    === CURRENT MEMORY ===    active facts, those matching the message first
    === RELEVANT HISTORY ===  past turns and digests found for this message (see `relevant`)
    === KNOWLEDGE ===         knowledge-base passages matching the message (see `knowledge`)
    === CURRENT SESSION ===   the last turns of the active session

It makes no model call and writes nothing. Each section's candidate lines are ranked; `budget`
decides which lines fit the token budget, and the message itself is never trimmed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, tzinfo

from ..ledger.sessions import active_session, get_session
from ..retrieval.lines import (
    CURRENT_MEMORY,
    CURRENT_SESSION,
    EPISODIC,
    KNOWLEDGE,
    OPEN_ITEMS,
    ORDER,
    RELEVANT_HISTORY,
    STABLE,
    Line,
)
from ..retrieval.query import analyse
from ..store.api import Connection
from ..store.errors import DatabaseError
from ..store.settings import Settings
from ..text.tokens import estimate
from . import budget as budgeting
from . import sources

SEPARATOR = "---"
LARGE_MESSAGE_TOKENS = 150_000
"""Above this estimate a message may not fit a model's context window: say so."""


@dataclass
class Section:
    """A section of the context: header name, an optional preamble, the kept lines."""

    name: str
    lines: list[Line]
    preamble: str = ""
    dropped: int = 0

    def render(self) -> str:
        """The section's text: header, preamble, then one entry per line."""
        parts = [f"=== {self.name} ==="]
        if self.preamble:
            parts.append(self.preamble)
        parts.extend(line.text for line in self.lines)
        return "\n".join(parts)

    @property
    def tokens(self) -> int:
        """Estimated tokens of the rendered section."""
        return estimate(self.render())


@dataclass
class Context:
    """The assembled context for one message.

    ``sections`` holds only non-empty sections in `ORDER`. ``session_id`` is the session the
    message belongs to (None when it would open a new one). ``notes`` are one-line remarks for
    the person (e.g. the message alone exceeds the budget). ``requests`` says what rheo did
    for the message's explicit memory requests ("stored memory #12", "forgot #3 (…)").
    ``candidates`` (section name -> every candidate line, kept or not) and ``by_share``
    (section name -> the lines kept within the section's guaranteed share, before the rest
    went by rank) say why a line is absent: never found, ranked out, or displaced by a share
    (`bench/locomo.py --explain-misses`).
    """

    sections: list[Section]
    message: str
    budget: int
    session_id: int | None
    notes: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    candidates: dict[str, list[Line]] = field(default_factory=dict, repr=False)
    by_share: dict[str, list[Line]] = field(default_factory=dict, repr=False)

    def section(self, name: str) -> Section | None:
        """The section called ``name``, if present."""
        return next((s for s in self.sections if s.name == name), None)

    def stable_text(self) -> str:
        """The sections in `STABLE` (cacheable within a session), rendered; may be empty."""
        return "\n\n".join(s.render() for s in self.sections if s.name in STABLE)

    def volatile_text(self) -> str:
        """The other sections, then ``---`` and the message (the message alone when there
        is no section at all: no separator with nothing above it)."""
        if not self.sections:
            return self.message
        body = "\n\n".join(s.render() for s in self.sections if s.name not in STABLE)
        tail = f"{SEPARATOR}\n{self.message}"
        return f"{body}\n\n{tail}" if body else tail

    def text(self) -> str:
        """The whole injected text: every section, ``---``, then the message (alone when
        there is no section)."""
        stable = self.stable_text()
        return f"{stable}\n\n{self.volatile_text()}" if stable else self.volatile_text()

    @property
    def context_tokens(self) -> int:
        """Estimated tokens of the sections (what the budget limits)."""
        return sum(s.tokens + 1 for s in self.sections)

    @property
    def message_tokens(self) -> int:
        """Estimated tokens of the message."""
        return estimate(self.message)

    def source_turn_ids(self) -> set[int]:
        """Every turn id the injected lines stand for (directly or through items/digests)."""
        return {tid for s in self.sections for line in s.lines for tid in line.turn_ids}


PREAMBLES = {
    OPEN_ITEMS: (
        "Commitments the person made that are still open. Follow up on them proactively "
        "when it fits: ask how they are going."
    ),
    EPISODIC: (
        "Recent past sessions, newest first: summaries, or how the last session ended while "
        "its summary is not written yet."
    ),
    CURRENT_MEMORY: "Durable facts about the person, most relevant first.",
    RELEVANT_HISTORY: "Earlier conversation that matches this message, with dates.",
    KNOWLEDGE: "Passages from the person's own documents that match this message.",
    CURRENT_SESSION: "The conversation so far in this session, oldest first.",
}


def assemble(
    conn: Connection,
    *,
    profile: str,
    message: str,
    now: datetime,
    settings: Settings,
    session_id: int | None = None,
    before_turn_id: int | None = None,
    budget: int | None = None,
    assistant: str | None = None,
    tolerant: bool = False,
) -> Context:
    """Assemble the injected context for ``message`` at ``now`` (aware datetime).

    ``session_id`` is the message's session when its turn is already stored, together with
    ``before_turn_id`` (that turn's id, so the message is not repeated in CURRENT SESSION).
    Without it, the session is the one a turn at ``now`` would join (none if the gap has
    passed). ``budget`` (tokens) overrides ``settings.budget_tokens``. Times are shown in
    ``now``'s time zone. ``assistant`` names the assistant the message is for: its facts and
    the shared ones are injected, its own winning on a topic (None: shared facts only).
    Reads only; never raises for an empty store.

    ``tolerant`` (a chat turn): a part of the store that cannot be read leaves its section
    out and adds one note naming what was left out, instead of raising.
    """
    limit = settings.budget_tokens if budget is None else max(0, budget)
    unreadable: dict[str, str] | None = {} if tolerant else None
    try:
        if session_id is None:
            active = active_session(conn, profile, now, settings.gap_s)
            session_id = active.id if active else None
        elif before_turn_id is None:
            get_session(conn, profile, session_id)
    except (DatabaseError, MemoryError) as exc:
        if unreadable is None:
            raise
        unreadable[CURRENT_SESSION] = " ".join(str(exc).split())[:160]
    tz: tzinfo | None = now.tzinfo
    query = analyse(message, now)
    candidates = sources.collect(
        conn,
        profile=profile,
        message=message,
        now=now,
        tz=tz,
        settings=settings,
        session_id=session_id,
        before_turn_id=before_turn_id,
        budget=limit,
        assistant=assistant,
        unreadable=unreadable,
        query=query,
    )
    first_pass: dict[str, list[Line]] = {}
    kept = budgeting.allocate(
        candidates,
        limit,
        PREAMBLES,
        shares=budgeting.shares_for(query),
        first_pass=first_pass,
    )
    sections = [
        Section(
            name=name,
            lines=sorted(kept[name], key=lambda ln: ln.order),
            preamble=PREAMBLES.get(name, ""),
            dropped=len(candidates.get(name, [])) - len(kept[name]),
        )
        for name in ORDER
        if kept.get(name)
    ]
    ctx = Context(
        sections=sections,
        message=message,
        budget=limit,
        session_id=session_id,
        candidates=candidates,
        by_share=first_pass,
    )
    _enforce(ctx)
    if unreadable:
        names = ", ".join(n.lower() for n in ORDER if n in unreadable)
        reason = next(iter(unreadable.values()))
        ctx.notes.append(
            f"memory partly unreadable ({names}: {reason}); answering with what could be "
            "read; 'rheo doctor' checks the store"
        )
    if ctx.message_tokens > limit:
        window = (
            " and maybe more than the model's context window"
            if ctx.message_tokens > LARGE_MESSAGE_TOKENS
            else ""
        )
        ctx.notes.append(
            f"the message is about {ctx.message_tokens:,} tokens, more than the "
            f"{limit:,}-token context budget{window}; it is sent whole and the injected "
            f"context is kept to the budget"
        )
    return ctx


def _enforce(ctx: Context) -> None:
    """Drop the lowest-ranked lines until the rendered sections fit the budget, essential
    ones (open items, facts matching the message) last.

    `budget.allocate` already keeps within the budget by its per-line estimates; this guards
    the rendered total (joins and rounding) so the promise holds exactly.
    """
    while ctx.sections and ctx.context_tokens > ctx.budget:
        section, line = min(
            ((s, ln) for s in ctx.sections for ln in s.lines),
            key=lambda pair: (pair[1].essential, pair[1].rank),
        )
        section.lines.remove(line)
        section.dropped += 1
        if not section.lines:
            ctx.sections.remove(section)
