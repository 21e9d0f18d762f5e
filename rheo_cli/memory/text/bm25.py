"""Okapi bm25 computed over one profile's own statistics, for ranking a bounded set of texts.

FTS5's built-in ``bm25()`` takes its statistics (document count, each word's document
frequency, average length) from the whole index, so one profile's volume would reorder
another's results. Here the caller gives the profile's own counts, and term frequencies and
lengths are read from the candidate texts themselves: the same profile data always ranks the
same way, whatever other profiles hold.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence

K1 = 1.2
SCAN_CHARS = 4_000
"""Term frequencies are counted in a text's first this-many characters (a long paste)."""
B = 0.75
_WORD = re.compile(r"[^\W_]+", re.UNICODE)


def fold(text: str) -> str:
    """``text`` case-folded with accents removed (ASCII text only case-folded)."""
    folded = text.casefold()
    if folded.isascii():
        return folded
    decomposed = unicodedata.normalize("NFKD", folded)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def stem(word: str) -> str:
    """A light English suffix strip (tomatoes -> tomato, planted -> plant), so a query word
    counts in every word that starts with its stem."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix) and word.isascii():
            return word[: -len(suffix)]
    return word


def term_pattern(term: str) -> re.Pattern[str]:
    """A pattern counting ``term`` (a word, a ``"phrase"`` or a ``prefix*``) in folded text."""
    words = _WORD.findall(fold(term.rstrip("*")))
    if not words:
        return re.compile(r"(?!x)x")
    parts = [re.escape(stem(w)) for w in words]  # a prefix* counts like a stem
    return re.compile(r"(?<!\w)" + r"\w*\W+".join(parts))


def idf(total: int, df: int) -> float:
    """bm25's inverse document frequency of a word held by ``df`` of ``total`` texts (> 0)."""
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


def scores(
    texts: Sequence[str],
    ids: Sequence[int],
    terms: Sequence[str],
    total: int,
    dfs: Sequence[int],
    holders: Sequence[set[int] | None],
) -> list[float]:
    """bm25 of each text (``ids[i]`` is ``texts[i]``'s turn id) for ``terms``, higher is
    better. ``total`` is the profile's number of turns, ``dfs[i]`` how many of them hold
    ``terms[i]`` and ``holders[i]`` which (None when too many to list); the average length is
    the candidates'. A term the index says a text holds counts at least once there."""
    if not texts:
        return []
    folded = [fold(t[:SCAN_CHARS]) for t in texts]
    lengths = [max(1, t.count(" ") + 1) for t in texts]  # words, near enough, fast
    average = sum(lengths) / len(lengths)
    out = [0.0] * len(texts)
    for term, df, held in zip(terms, dfs, holders, strict=True):
        weight = idf(total, df)
        pattern = term_pattern(term)
        for i, text in enumerate(folded):
            tf = len(pattern.findall(text))
            if not tf and held is not None and ids[i] in held:
                tf = 1
            if tf:
                norm = K1 * (1 - B + B * lengths[i] / average)
                out[i] += weight * tf * (K1 + 1) / (tf + norm)
    return out
