"""How well a stored text answers the current message: one scorer for turns, digests, facts.

score = bm25 (normalised to the best candidate) + 0.8 × weighted coverage + 0.2 × phrases.
Coverage weights each query word by how rare it is among the candidates (an inverse document
frequency over the pool; `ENTITY_FACTOR` can weigh names and numbers more, off since a
speaker's name counted 1.5× outranked rarer words on LoCoMo), so a name that appears in every
turn ("Melanie" in a conversation with Melanie) counts for little while a rare word counts for
much. A word matches any word that starts with its light stem (``starting`` -> ``start`` ->
"start", "starts", "started"), case- and accent-folded; one compiled pattern per query word
keeps this fast.
"""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..facts.equivalence import _stem, _strip_accents
from .query import Query

COVERAGE_WEIGHT = 0.8
PHRASE_WEIGHT = 0.2
ENTITY_FACTOR = 1.0


def fold(text: str) -> str:
    """``text`` case-folded, accents removed (only when it has non-ASCII characters)."""
    folded = text.casefold()
    if folded.isascii():
        return folded
    decomposed = unicodedata.normalize("NFKD", folded)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def term_stem(term: str) -> str:
    """The folded light stem a query word is matched by."""
    return _stem(_strip_accents(term.casefold()))


@dataclass
class Scorer:
    """Scores texts against one query; build it with `Scorer.for_pool`.

    All query words are found in one pass over a text by one compiled pattern: their stems,
    each at the start of a word (a longer stem wins where two overlap).
    """

    query: Query
    weights: dict[str, float] = field(default_factory=dict)
    by_stem: dict[str, list[str]] = field(default_factory=dict)
    pattern: re.Pattern[str] | None = None

    @classmethod
    def for_pool(cls, query: Query, pool: Iterable[str]) -> Scorer:
        """A scorer whose word weights come from how many texts of ``pool`` contain each
        query word (rarer: heavier)."""
        by_stem: dict[str, list[str]] = {}
        for term in query.terms:
            by_stem.setdefault(term_stem(term), []).append(term)
        pattern = None
        if by_stem:
            alternatives = "|".join(re.escape(s) for s in sorted(by_stem, key=len, reverse=True))
            pattern = re.compile(r"(?<!\w)(?:" + alternatives + ")")
        scorer = cls(query, {}, by_stem, pattern)
        texts = [scorer.matched(text) for text in pool]
        n = len(texts)
        for term in query.terms:
            df = sum(1 for found in texts if term in found)
            idf = math.log((n + 1) / (df + 0.5)) if n else 1.0
            scorer.weights[term] = max(0.05, idf) * (
                ENTITY_FACTOR if term in query.entities else 1.0
            )
        return scorer

    @classmethod
    def for_idf(cls, query: Query, idfs: dict[str, float]) -> Scorer:
        """A scorer whose word weights are given inverse document frequencies (words
        without one weigh 1)."""
        scorer = cls.for_pool(query, ())
        for term in query.terms:
            factor = ENTITY_FACTOR if term in query.entities else 1.0
            scorer.weights[term] = max(0.05, idfs.get(term, 1.0)) * factor
        return scorer

    def matched(self, text: str) -> list[str]:
        """The query words found in ``text``."""
        if self.pattern is None:
            return []
        found = set(self.pattern.findall(fold(text)))
        return [t for stem, terms in self.by_stem.items() if stem in found for t in terms]

    def counter(self, text: str) -> Callable[[int, int], int]:
        """``hits(start, end)``: how many query-word matches lie in ``text[start:end]``.

        ASCII text is scanned once (folding keeps its offsets); other text per span."""
        if self.pattern is None:
            return lambda start, end: 0
        if text.isascii():
            positions = [m.start() for m in self.pattern.finditer(text.casefold())]
            return lambda start, end: (
                bisect.bisect_left(positions, end) - bisect.bisect_left(positions, start)
            )
        return lambda start, end: len(self.matched(text[start:end]))

    def score(self, text: str, bm25: float = 0.0) -> tuple[float, list[str], list[str]]:
        """``(score, matched words, matched phrases)`` of ``text``; ``bm25`` is the text's
        normalised bm25 in [0, 1] when it came from an FTS search."""
        matched = self.matched(text)
        total = sum(self.weights.values())
        coverage = sum(self.weights.get(t, 0.0) for t in matched) / total if total else 0.0
        phrases: list[str] = []
        if self.query.phrases:
            lowered = " ".join(fold(text).split())
            phrases = [p for p in self.query.phrases if p in lowered]
        value = bm25 + COVERAGE_WEIGHT * coverage + PHRASE_WEIGHT * min(2, len(phrases))
        return value, matched, phrases
