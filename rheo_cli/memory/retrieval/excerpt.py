"""Excerpts of long turns: the whole sentences around the words a message matched.

A history line stands for its turn (it names the turn's id, so the full text can be looked up);
what it shows of a long turn are the sentences that hold the message's words, in their order,
with ``…`` where sentences were left out, and neighbouring sentences only while the excerpt is
shorter than a floor (a matched sentence alone may read as a fragment). A turn that matched no
word (a neighbour of a hit) shows the sentences next to the hit: its first ones when it follows
the hit, its last ones when it precedes it. Short turns are shown whole. Sentences are never
cut; one sentence longer than the line's cap is cut in its middle (`render.clip`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..text.render import clip
from ..text.tokens import estimate

_SENTENCE = re.compile(r"(?<=[.!?…])\s+|\n+")
GAP = "…"


def sentences(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` character spans of ``text``'s sentences (split after ``.``, ``!``,
    ``?``, ``…`` followed by whitespace, and at line breaks), blank ones left out."""
    spans: list[tuple[int, int]] = []
    start = 0
    for boundary in _SENTENCE.finditer(text):
        if text[start : boundary.start()].strip():
            spans.append((start, boundary.start()))
        start = boundary.end()
    if text[start:].strip():
        spans.append((start, len(text)))
    return spans


def excerpt(
    text: str,
    max_tokens: int,
    hits: Callable[[int, int], int],
    *,
    min_tokens: int,
    soft_max: int | None = None,
    from_end: bool = False,
) -> str:
    """``text`` cut to whole sentences, about ``min_tokens`` to ``max_tokens`` tokens.

    ``hits(start, end)`` counts the message's words in ``text[start:end]``. Text of at most
    ``min_tokens`` is returned unchanged. Otherwise the sentence with the most hits is kept,
    then the other sentences with hits, best first, while the excerpt stays within
    ``soft_max`` (default ``max_tokens``), then the sentences next to them (after, then
    before) while the excerpt is under ``min_tokens``. With no hit at all, the first sentences
    (the last ones with ``from_end``) until they reach ``min_tokens``. Kept sentences are
    joined in their order, ``…`` marking text left out; the result is at most ``max_tokens``
    (a longer one is cut in its middle, `clip`), and is ``text`` itself when nothing is left
    out.
    """
    if estimate(text) <= min(min_tokens, max_tokens):
        return text
    spans = sentences(text)
    if len(spans) <= 1:
        return text if estimate(text) <= max_tokens else clip(text, max_tokens)
    cost = [estimate(text[a:b]) + 1 for a, b in spans]
    counts = [hits(a, b) for a, b in spans]
    chosen: set[int] = set()
    used = 0
    room = max_tokens if soft_max is None else min(soft_max, max_tokens)
    if any(counts):
        for i in sorted(range(len(spans)), key=lambda i: (-counts[i], i)):
            if not counts[i]:
                break
            if chosen and used + cost[i] > room:
                continue
            chosen.add(i)
            used += cost[i]
        floor = min(min_tokens, max_tokens)
        while used < floor:
            nxt = [i + 1 for i in chosen if i + 1 < len(spans) and i + 1 not in chosen]
            prev = [i - 1 for i in chosen if i - 1 >= 0 and i - 1 not in chosen]
            options = [i for i in (*sorted(nxt), *sorted(prev, reverse=True))]
            pick = next((i for i in options if used + cost[i] <= max_tokens), None)
            if pick is None:
                break
            chosen.add(pick)
            used += cost[pick]
    else:
        order = range(len(spans) - 1, -1, -1) if from_end else range(len(spans))
        for i in order:
            if chosen and (used >= min_tokens or used + cost[i] > max_tokens):
                break
            chosen.add(i)
            used += cost[i]
    if len(chosen) == len(spans):
        return text if estimate(text) <= max_tokens else clip(text, max_tokens)
    parts: list[str] = []
    last = -1
    for i in sorted(chosen):
        if i != last + 1:
            parts.append(GAP)
        a, b = spans[i]
        parts.append(text[a:b].strip())
        last = i
    if last != len(spans) - 1:
        parts.append(GAP)
    shown = " ".join(parts)
    return shown if estimate(shown) <= max_tokens else clip(shown, max_tokens)
