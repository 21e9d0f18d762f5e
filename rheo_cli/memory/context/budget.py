"""Spending the context token budget across sections.

What matters most goes in first, whatever the budget: open items and the facts that match the
message (`Line.essential`) are kept before any share is handed out (`reserve`), so at a small
budget they are the last to go (``rheo context --budget 150 "where do I live?"`` keeps the
answer). Then each section is guaranteed a share of the budget (`SHARES`): a first pass fills
every section with its best-ranked lines up to its share. The rest of the budget then goes to
the best lines left in any section, by rank, so it is spent where this message's relevance is:
on the current conversation during a session, on RELEVANT HISTORY and matching facts for a
question about the past. Ranks share one scale (see `sources` and `relevant`): current-session
turns above open items, above matching facts and history hits, above digests and unmatched
facts. Lines that do not fit are dropped lowest rank first; CURRENT SESSION keeps a contiguous
run of its newest turns (a gap in the middle of a conversation reads worse than a shorter one).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..retrieval.lines import (
    CURRENT_MEMORY,
    CURRENT_SESSION,
    EPISODIC,
    KNOWLEDGE,
    OPEN_ITEMS,
    ORDER,
    RELEVANT_HISTORY,
    Line,
)
from ..retrieval.query import Query
from ..text.tokens import estimate

SHARES: dict[str, float] = {
    OPEN_ITEMS: 0.05,
    EPISODIC: 0.10,
    CURRENT_MEMORY: 0.10,
    RELEVANT_HISTORY: 0.30,
    KNOWLEDGE: 0.05,
    CURRENT_SESSION: 0.30,
}
"""First-pass share of the budget guaranteed to each section (fractions of the budget; the
rest goes by rank). Chosen on LoCoMo's first five conversations (BENCHMARKS.md)."""

DEDUP = True
"""Of the lines that say what one turn says (`Line.same_as_turn`: the turn in RELEVANT
HISTORY, a fact learnt from it), only the first kept takes budget."""

DATED_SHARES: dict[str, float] = {**SHARES, RELEVANT_HISTORY: 0.45, CURRENT_SESSION: 0.2}
"""Shares for a message that names a date or period ("what did we decide in March?"): the
history of that time first."""
FOLLOW_UP_SHARES: dict[str, float] = {**SHARES, RELEVANT_HISTORY: 0.15, CURRENT_SESSION: 0.45}
"""Shares for a message that leans on the conversation ("and after that?", `Query.follow_up`):
the current session first."""


def shares_for(query: Query) -> dict[str, float]:
    """The guaranteed shares for a message: `DATED_SHARES` when it names a date or period
    (and is not a follow-up), `FOLLOW_UP_SHARES` for a follow-up, else `SHARES`."""
    if query.follow_up:
        return FOLLOW_UP_SHARES
    if query.times:
        return DATED_SHARES
    return SHARES


PRIORITY = (CURRENT_SESSION, OPEN_ITEMS, CURRENT_MEMORY, RELEVANT_HISTORY, KNOWLEDGE, EPISODIC)
"""Order in which sections fill their shares in the first pass."""

CONTIGUOUS = frozenset({CURRENT_SESSION})
"""Sections that keep a prefix of their ranking: the first line that does not fit ends them."""


def section_overhead(name: str, preamble: str) -> int:
    """Tokens a section costs before its first line: header, preamble, blank line."""
    return estimate(f"=== {name} ===") + (estimate(preamble) + 1 if preamble else 0) + 2


ESSENTIAL = (OPEN_ITEMS, CURRENT_MEMORY)
"""Sections whose essential lines (`Line.essential`) are kept before anything else."""
RESERVE_SHARE = 1.0
"""Essential lines are kept first up to this share of the budget: all of it, so they are the
last to go at any budget (facts matching a message are few: the cap bounds them)."""


def reserve(
    ranked: dict[str, list[Line]],
    kept: dict[str, list[Line]],
    used: dict[str, int],
    overhead: Mapping[str, int],
    limit: int,
) -> int:
    """Keep the essential lines of `ESSENTIAL` sections first, best ranked first, while they
    fit `RESERVE_SHARE` of ``limit`` tokens (section overheads included); ``ranked[name]`` is
    reordered to start with what was kept, ``kept`` and ``used`` are filled. Returns the
    tokens spent."""
    total = 0
    pool = sorted(
        ((line.rank, name, line) for name in ESSENTIAL for line in ranked[name] if line.essential),
        key=lambda entry: -entry[0],
    )
    for _, name, line in pool:
        cost = line.tokens + (0 if kept[name] else overhead[name])
        if total + cost <= limit * RESERVE_SHARE:
            kept[name].append(line)
            used[name] += cost
            total += cost
    for name in ESSENTIAL:
        chosen = {id(line) for line in kept[name]}
        ranked[name] = kept[name] + [ln for ln in ranked[name] if id(ln) not in chosen]
    return total


def allocate(
    candidates: Mapping[str, list[Line]],
    limit: int,
    preambles: Mapping[str, str],
    shares: Mapping[str, float] | None = None,
    first_pass: dict[str, list[Line]] | None = None,
) -> dict[str, list[Line]]:
    """Choose which candidate lines to keep within ``limit`` tokens.

    ``candidates`` maps a section name to its lines in any order (``Line.rank``: higher is
    better). Returns the kept lines per section (every name of `ORDER`, possibly empty), in
    rank order. The total of kept lines plus section overheads never exceeds ``limit``.
    ``shares`` defaults to `SHARES`. Essential lines are reserved first (`reserve`).
    ``first_pass``, when given, receives the lines each
    section kept within its guaranteed share (the rest were kept by rank), for explaining
    what displaced what.
    """
    shares = SHARES if shares is None else shares
    ranked = {name: sorted(candidates.get(name, []), key=lambda ln: -ln.rank) for name in ORDER}
    overhead = {name: section_overhead(name, preambles.get(name, "")) for name in ORDER}
    kept: dict[str, list[Line]] = {name: [] for name in ORDER}
    used = dict.fromkeys(ORDER, 0)
    next_index = dict.fromkeys(ORDER, 0)
    total = 0
    said: set[int] = set()  # turns a kept `same_as_turn` line already says

    def repeats(line: Line) -> bool:
        return (
            DEDUP and line.same_as_turn and bool(line.turn_ids) and said.issuperset(line.turn_ids)
        )

    def keep(name: str, line: Line, cost: int) -> None:
        nonlocal total
        kept[name].append(line)
        used[name] += cost
        total += cost
        if line.same_as_turn:
            said.update(line.turn_ids)

    def fill(name: str, cap: float) -> None:
        lines = ranked[name]
        i = next_index[name]
        skipped: list[Line] = []
        while i < len(lines):
            line = lines[i]
            cost = line.tokens + (0 if kept[name] else overhead[name])
            if not line.guaranteed or repeats(line):
                skipped.append(line)
            elif used[name] + cost <= cap and total + cost <= limit:
                keep(name, line, cost)
            elif name in CONTIGUOUS:
                break
            else:
                skipped.append(line)
            i += 1
        # Lines skipped in this pass stay available to the next one, in rank order.
        ranked[name] = kept[name] + skipped + lines[i:]
        next_index[name] = len(kept[name])

    total = reserve(ranked, kept, used, overhead, limit)
    for name in ranked:
        next_index[name] = len(kept[name])
    for name in PRIORITY:
        fill(name, shares.get(name, 0.0) * limit)
    if first_pass is not None:
        first_pass.update({name: list(lines) for name, lines in kept.items()})
    # Second pass: the best remaining line of any section, while anything fits.
    pool = sorted(
        ((line.rank, name, line) for name in ORDER for line in ranked[name][len(kept[name]) :]),
        key=lambda entry: -entry[0],
    )
    blocked: set[str] = set()
    for _, name, line in pool:
        if name in blocked or repeats(line):
            continue
        cost = line.tokens + (0 if kept[name] else overhead[name])
        if total + cost <= limit:
            keep(name, line, cost)
        elif name in CONTIGUOUS:
            blocked.add(name)
    return kept
