"""How well a stored text answers the current message: one scorer for turns, digests, facts.

score = bm25 (normalised to the best candidate) + 0.8 × weighted coverage + 0.2 × phrases.
Coverage weights each query word by how rare it is among the candidates (an inverse document
frequency over the pool), names and numbers counting 1.5×, so a name that appears in every
turn ("Melanie" in a conversation with Melanie) counts for little while a rare word counts for
much. Words are compared case- and accent-folded with a light stemmer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from .normalize import _stem, _strip_accents
from .query import Query

_WORDS = re.compile(r"[^\W_]+", re.UNICODE)
COVERAGE_WEIGHT = 0.8
PHRASE_WEIGHT = 0.2
ENTITY_FACTOR = 1.5


def word_stems(text: str) -> set[str]:
    """The folded, lightly stemmed words of ``text``."""
    return {_stem(_strip_accents(w.casefold())) for w in _WORDS.findall(text)}


@dataclass
class Scorer:
    """Scores texts against one query; build it with `Scorer.for_pool`."""

    query: Query
    weights: dict[str, float] = field(default_factory=dict)
    stems: dict[str, str] = field(default_factory=dict)

    @classmethod
    def for_pool(cls, query: Query, pool: Iterable[str]) -> Scorer:
        """A scorer whose word weights come from how many texts of ``pool`` contain each
        query word (rarer: heavier)."""
        stems = {t: _stem(_strip_accents(t)) for t in query.terms}
        texts = [word_stems(text) for text in pool]
        n = len(texts)
        weights = {}
        for term, stem in stems.items():
            df = sum(1 for words in texts if stem in words)
            idf = math.log((n + 1) / (df + 0.5)) if n else 1.0
            weights[term] = max(0.05, idf) * (ENTITY_FACTOR if term in query.entities else 1.0)
        return cls(query, weights, stems)

    def score(self, text: str, bm25: float = 0.0) -> tuple[float, list[str], list[str]]:
        """``(score, matched words, matched phrases)`` of ``text``; ``bm25`` is the text's
        normalised bm25 in [0, 1] when it came from an FTS search."""
        words = word_stems(text)
        matched = [t for t, s in self.stems.items() if s in words]
        total = sum(self.weights.values())
        coverage = sum(self.weights[t] for t in matched) / total if total else 0.0
        lowered = " ".join(text.casefold().split())
        phrases = [p for p in self.query.phrases if p in lowered]
        value = bm25 + COVERAGE_WEIGHT * coverage + PHRASE_WEIGHT * min(2, len(phrases))
        return value, matched, phrases
