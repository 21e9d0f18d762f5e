"""Spending the context token budget across sections.

Each section has a share of the budget (`SHARES`). A first pass fills every section with its
best-ranked lines up to its share; a second pass hands what is left to the sections in
`PRIORITY` order, so an empty section's share is not wasted. Lines that do not fit are dropped
lowest rank first; CURRENT SESSION keeps a contiguous run of its newest turns (a gap in the
middle of a conversation reads worse than a shorter one).
"""

from __future__ import annotations

from collections.abc import Mapping

from .lines import (
    CURRENT_MEMORY,
    CURRENT_SESSION,
    EPISODIC,
    OPEN_ITEMS,
    ORDER,
    RELEVANT_HISTORY,
    Line,
)
from .tokens import estimate

SHARES: dict[str, float] = {
    OPEN_ITEMS: 0.10,
    EPISODIC: 0.15,
    CURRENT_MEMORY: 0.20,
    RELEVANT_HISTORY: 0.25,
    CURRENT_SESSION: 0.30,
}
"""First-pass share of the budget per section (fractions summing to 1)."""

PRIORITY = (CURRENT_SESSION, OPEN_ITEMS, CURRENT_MEMORY, RELEVANT_HISTORY, EPISODIC)
"""Order in which sections take what is left of the budget in the second pass."""

CONTIGUOUS = frozenset({CURRENT_SESSION})
"""Sections that keep a prefix of their ranking: the first line that does not fit ends them."""


def section_overhead(name: str, preamble: str) -> int:
    """Tokens a section costs before its first line: header, preamble, blank line."""
    return estimate(f"=== {name} ===") + (estimate(preamble) + 1 if preamble else 0) + 2


def allocate(
    candidates: Mapping[str, list[Line]],
    limit: int,
    preambles: Mapping[str, str],
    shares: Mapping[str, float] = SHARES,
) -> dict[str, list[Line]]:
    """Choose which candidate lines to keep within ``limit`` tokens.

    ``candidates`` maps a section name to its lines in any order (``Line.rank``: higher is
    better). Returns the kept lines per section (every name of `ORDER`, possibly empty), in
    rank order. The total of kept lines plus section overheads never exceeds ``limit``.
    """
    ranked = {name: sorted(candidates.get(name, []), key=lambda ln: -ln.rank) for name in ORDER}
    overhead = {name: section_overhead(name, preambles.get(name, "")) for name in ORDER}
    kept: dict[str, list[Line]] = {name: [] for name in ORDER}
    used = dict.fromkeys(ORDER, 0)
    next_index = dict.fromkeys(ORDER, 0)
    total = 0

    def fill(name: str, cap: float) -> None:
        nonlocal total
        lines = ranked[name]
        i = next_index[name]
        skipped: list[Line] = []
        while i < len(lines):
            line = lines[i]
            cost = line.tokens + (0 if kept[name] else overhead[name])
            if used[name] + cost <= cap and total + cost <= limit:
                kept[name].append(line)
                used[name] += cost
                total += cost
            elif name in CONTIGUOUS:
                break
            else:
                skipped.append(line)
            i += 1
        # Lines skipped in this pass stay available to the next one, in rank order.
        ranked[name] = kept[name] + skipped + lines[i:]
        next_index[name] = len(kept[name])

    for name in PRIORITY:
        fill(name, shares.get(name, 0.0) * limit)
    for name in PRIORITY:
        fill(name, float(limit))
    return kept
