"""The words that say what a fact is about, whoever wrote it and in whichever person.

"I use Neovim", "Ana uses Neovim" and "The person uses Neovim" are one fact in three wordings:
`roots` keeps the words that carry the meaning (``use``, ``neovim``), lightly stemmed and
folded, and drops function words, the person's pronouns ("I", "my", "je", "mein", "mi") and
filler ("the person", "thing"). `names` picks the proper names a text mentions, and `related`
widens a word to the few everyday words of its field ("relationship" -> "broke up",
"boyfriend", "divorce"...), so "forget my relationship with Alex" finds a fact about the
breakup. Loose on purpose: callers use it where a candidate is then checked (forgetting,
consolidation, auditing), never to decide alone that two facts are the same (`equivalence`).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from .equivalence import ARTICLES, content_words

STOP = (
    frozenset(
        """a an the of to in on at for and or but is are was were be been being has have had do
    does did will would shall should can could may might must this that these those it its
    with from by as about into over after before than then so very just also not no yes
    there here am s t ll ve re d m he him his she her hers they them their theirs who whom
    which whose
    que qui est et de du des en a au aux pour avec sur dans ce cet cette ces son sa ses il
    elle ils elles on ne pas par plus ou mais donc car
    und ist nicht zu mit von fur auf im am dem den des es er sie ihr ihm sich wir uns
    oder aber auch noch schon sehr
    y o en un una es con por para su sus lo al se del muy pero""".split()  # noqa: SIM905
    )
    | ARTICLES
)
"""Function words (English, French, German, Spanish; accents folded)."""

PERSON = frozenset(
    """i me my mine myself we us our ours ourselves you your yours yourself person user
    people someone something thing things stuff fact facts information info detail details
    everything anything all what told tell said say know knew remember forget forgotten please
    je j moi mon ma mes nous notre nos tu toi ton ta tes vous votre vos
    ich mich mir mein meine meinen meinem meiner meines du dich dir dein deine bitte
    yo mi mis mio mia mios mias tu te ti tus""".split()  # noqa: SIM905
)
"""Words for the person, the assistant or "the thing" that never say what a fact is about."""

_RELATED_GROUPS = (
    """relationship relationships dating boyfriend girlfriend partner partners breakup break
    broke split separated separation divorce divorced married marry marriage wife husband ex
    engaged engagement romance fiance fiancee""",
    """job work works worked working employer company career position role office hired
    fired quit resigned boss colleague colleagues arbeit beruf job travail emploi boulot
    trabajo empleo""",
    """home address live lives lived living house flat apartment moved move reside city
    town neighbourhood neighborhood adresse wohnort wohne wohnung direccion domicilio
    vivo vive habite habites""",
    """health diagnosis illness sick condition medication medicine doctor allergy allergic
    therapy therapist""",
    """phone mobile cell number telefon telefonnummer handy handynummer nummer telephone
    numero portable telefono movil""",
    """diet vegetarian vegan eat eats eating food meat""",
    """salary pay paid income earn earns earning money""",
)
"""Everyday fields whose words stand for one another when a person names the field ("my
relationship", "my job") rather than the words a fact was stored in."""


def root(word: str) -> str:
    """A word folded to a rough root: case and accents folded, a possessive ``'s`` and up
    to two English suffixes (-ies, -ing, -ed, -es, -s, -e, -y) dropped while three letters
    remain (``uses``/``use`` -> ``use``, ``lives``/``living`` -> ``liv``)."""
    decomposed = unicodedata.normalize("NFKD", word.casefold())
    w = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    w = re.sub(r"'s$", "", w)
    if not w.isascii() or not w.isalpha():
        return w
    for _ in range(2):
        for suffix in ("ies", "ing", "ed", "es", "s", "e", "y"):
            if suffix == "s" and w.endswith(("ss", "us", "is")):
                continue
            if w.endswith(suffix) and len(w) - len(suffix) >= 3:
                w = w[: -len(suffix)]
                break
        else:
            break
    return w


def roots(text: str, properties: dict[str, Any] | None = None) -> set[str]:
    """The meaningful words of ``text`` (and ``properties``' values) as `root` forms: no
    function words, pronouns of the person or filler; numbers kept whole."""
    out = set()
    for word in content_words(text, properties or {}):
        if word in STOP or word in PERSON:
            continue
        if len(word) < 2 and not word.isdigit():
            continue
        out.add(word if word.isdigit() else root(word))
    return out


_NAME = re.compile(r"(?<![\w'’])([A-ZÀ-ÖØ-Þ][\w'’-]+)")


def names(text: str) -> set[str]:
    """Capitalised words of ``text`` that are not its first word, nor a pronoun or function
    word, as `root` forms: the names it mentions (``Alex``, ``Neovim``)."""
    found: set[str] = set()
    for m in _NAME.finditer(text):
        word = m.group(1)
        before = text[: m.start()].rstrip()
        if not before or before.endswith((".", "!", "?", ":", '"')):
            continue  # a sentence's first word is capitalised anyway
        folded = root(word)
        if folded in STOP or folded in PERSON or word.casefold() in PERSON:
            continue
        found.add(folded)
    return found


_RELATED: dict[str, frozenset[str]] = {}
_RELATED_RAW: dict[str, frozenset[str]] = {}
for _group in _RELATED_GROUPS:
    _raw = frozenset(_group.split())
    _words = frozenset(root(w) for w in _raw)
    for _w in _words:
        _RELATED[_w] = _RELATED.get(_w, frozenset()) | _words
        _RELATED_RAW[_w] = _RELATED_RAW.get(_w, frozenset()) | _raw


def related(words: Iterable[str]) -> set[str]:
    """``words`` (roots) with the roots of their everyday fields added."""
    out = set(words)
    for w in words:
        out |= _RELATED.get(w, frozenset())
    return out


def related_words(words: Iterable[str]) -> set[str]:
    """The words (as written, for a search index) of the everyday fields of ``words``
    (roots)."""
    out: set[str] = set()
    for w in words:
        out |= _RELATED_RAW.get(w, frozenset())
    return out


def meaningful(text: str) -> list[str]:
    """The words of ``text`` as written (case and accents folded), without function words,
    the person's pronouns or filler, in order and once each: for a search the person reads."""
    seen: list[str] = []
    for word in content_words(text, {}):
        if word not in STOP and word not in PERSON and word not in seen and len(word) > 1:
            seen.append(word)
    return seen


NUMBER = re.compile(r"\d[\d\s./-]*\d|\d")


def numbers(text: str) -> set[str]:
    """The numbers in ``text``, digits only (``555-0134`` -> ``5550134``)."""
    return {re.sub(r"\D", "", n) for n in NUMBER.findall(text)}


def own_words(text: str) -> str:
    """The person's own words in a message: a piped document (``<stdin>...</stdin>``) is
    someone else's text, so "never forget" inside it asks nothing."""
    return re.sub(r"<stdin>.*?(</stdin>|$)", " ", text, flags=re.S)


_CLAUSE = re.compile(r"[.!?;,\n]+\s*|\s+(?:and|but|then|et|mais|puis|und|aber|dann|y|pero)\s+")


def clauses(text: str) -> list[str]:
    """``text`` cut at sentence ends, commas and "and"/"but"/"then" (four languages)."""
    return [c.strip() for c in _CLAUSE.split(text) if c and c.strip()]


def quotes(text: str, label: str, properties: dict[str, Any] | None = None) -> bool:
    """Whether ``text`` (a sentence of a summary, a line) states the fact ``label``: every
    meaningful word of the fact is in it; or most of them (three in four, at least two); or,
    for a fact that names something (``Neovim``, ``Alex``), all its names and another word."""
    fact = roots(label, properties)
    if not fact:
        return False
    said = roots(text)
    shared = fact & said
    if fact <= said or (len(shared) >= 2 and len(shared) * 4 >= len(fact) * 3):
        return True
    named = names(label) & fact
    return bool(named) and named <= said and len(shared) >= 2
