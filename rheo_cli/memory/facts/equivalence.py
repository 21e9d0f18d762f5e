"""Keys that decide whether two facts are "the same": normalised topics and content keys.

A topic is a short key (``arowyn-school``): lower case, letters and digits of any script,
words joined by ``-``. Two facts under one topic are *equivalent* (a reinforcement, not a new
item) when they name the same numbers and proper names and share most of their words; any
other difference under the same topic is a change, which supersedes.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

_WORD = re.compile(r"\w+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_STOP = frozenset(
    """a an the of to in on at for and or but is are was were be been being has have had do
    does did will would shall should can could may might must this that these those it its
    with from by as about into over after before than then so very just also not no yes i me
    my mine we our you your he him his she her they them their there here""".split()  # noqa: SIM905
)
TOPIC_MAX = 60


def topic_key(text: str) -> str:
    """Normalise a topic: ``"Arowyn's School!"`` -> ``"arowyn-s-school"``; empty input gives
    ``""`` (callers derive a topic from the label then)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    words = _WORD.findall(folded.replace("_", " "))
    return "-".join(words)[:TOPIC_MAX].strip("-")


def _strip_accents(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def content_words(label: str, properties: dict[str, Any]) -> list[str]:
    """The words of a fact's label and property values, case- and accent-folded."""
    values = " ".join(
        v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in properties.values()
    )
    text = unicodedata.normalize("NFKC", f"{label} {values}").casefold()
    text = text.replace("cannot", "can not").replace("can't", "can not")
    text = re.sub(r"n['’]t\b", " not", text)  # don't -> do not
    return [_strip_accents(w) for w in _WORD.findall(text.replace("_", " "))]


def content_key(label: str, properties: dict[str, Any]) -> str:
    """A canonical form of a fact's content: its distinct folded words, sorted."""
    return " ".join(sorted(set(content_words(label, properties))))


def _stem(word: str) -> str:
    """A light English suffix strip (starts/starting/started -> start) for overlap only."""
    for _ in range(2):
        for suffix in ("ing", "ed", "es", "s"):
            if len(word) > len(suffix) + 3 and word.endswith(suffix) and word.isascii():
                word = word[: -len(suffix)]
                break
    return word


def _names(raw: str) -> set[str]:
    return {_strip_accents(w.casefold()) for w in re.findall(r"\b[A-Z][\w'-]*", raw)} - _STOP


NEGATIONS = frozenset(
    """not no never none nobody nothing nowhere neither nor without cannot cant dont doesnt
    didnt isnt arent wasnt werent wont hasnt havent hadnt quit quits stopped stop stops
    former formerly ex anymore longer ended gave lost left divorced ne pas plus jamais aucun
    aucune sans nicht kein keine keinen keiner nie niemals mehr nunca tampoco ningun ninguna
    ya mai nessun nessuna nao nunca geen niet nooit""".split()  # noqa: SIM905
)
"""Words that turn a statement into its opposite or say it changed (several languages)."""


def _negations(raw: str, words: list[str]) -> frozenset[str]:
    found = {w.replace("'", "") for w in words} & NEGATIONS
    if re.search(r"n['’]t\b", raw, re.IGNORECASE):
        found.add("not")
    return frozenset(found)


def equivalent(
    label_a: str, props_a: dict[str, Any], label_b: str, props_b: dict[str, Any]
) -> bool:
    """True when two facts (under the same topic) say the same thing.

    Same words of negation or change ("not", "no longer", "quit", "n'est plus", "nicht
    mehr"...), same numbers, no capitalised name in one that the other lacks, and a Jaccard
    overlap of at least 0.6 between their (lightly stemmed) content words without stop words.
    """
    raw_a = f"{label_a} {json.dumps(props_a, ensure_ascii=False)}"
    raw_b = f"{label_b} {json.dumps(props_b, ensure_ascii=False)}"
    words_a = content_words(label_a, props_a)
    words_b = content_words(label_b, props_b)
    if set(words_a) == set(words_b):
        return True
    if bool(_negations(raw_a, words_a)) != bool(_negations(raw_b, words_b)):
        return False
    if set(_NUMBER.findall(raw_a)) != set(_NUMBER.findall(raw_b)):
        return False
    # A proper name in one fact that the other does not mention at all: another entity.
    if (_names(raw_a) - set(words_b)) or (_names(raw_b) - set(words_a)):
        return False
    set_a = {_stem(w) for w in words_a} - _STOP
    set_b = {_stem(w) for w in words_b} - _STOP
    if not set_a or not set_b:
        return set_a == set_b
    return len(set_a & set_b) / len(set_a | set_b) >= 0.6
