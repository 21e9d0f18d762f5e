"""A small guess at which language a text is in, to keep facts in the person's language.

Two levels: the writing system (Latin, Cyrillic, CJK, Arabic, ...) from Unicode character
names, and for Latin-script text a stop-word vote among English, French, German, Spanish,
Italian, Portuguese and Dutch. A guess is only made when the evidence is clear; None means
"can't tell", which never counts as a mismatch.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

_SCRIPTS = (
    ("CJK", "cjk"),
    ("HIRAGANA", "cjk"),
    ("KATAKANA", "cjk"),
    ("HANGUL", "hangul"),
    ("LATIN", "latin"),
    ("CYRILLIC", "cyrillic"),
    ("GREEK", "greek"),
    ("ARABIC", "arabic"),
    ("HEBREW", "hebrew"),
    ("DEVANAGARI", "devanagari"),
    ("THAI", "thai"),
)
_STOPWORDS = {
    "en": "the and is are was to of in that it you my for with on have this will i not be at",
    "fr": "le la les et est sont de des du un une que qui pour avec dans mon ma mes je ne pas",
    "de": "der die das und ist sind zu von mit nicht ich ein eine den dem für auf auch mein",
    "es": "el la los las y es son de del que en un una por para con mi yo no se su lo",
    "it": "il lo la gli le e è sono di che un una per con mio mia io non del della nel",
    "pt": "o a os as e é são de do da que em um uma para com meu minha eu não se no na",
    "nl": "de het een en is zijn van dat in op met voor niet ik mijn je ook te aan",
}
_WORDS = {lang: set(words.split()) for lang, words in _STOPWORDS.items()}
_TOKEN = re.compile(r"[^\W\d_]+", re.UNICODE)


def script(text: str) -> str | None:
    """The writing system of most letters in ``text`` (>= 60% of them), else None."""
    counts: Counter[str] = Counter()
    for ch in text:
        if not ch.isalpha():
            continue
        name = unicodedata.name(ch, "")
        for prefix, label in _SCRIPTS:
            if name.startswith(prefix):
                counts[label] += 1
                break
    if not counts:
        return None
    label, n = counts.most_common(1)[0]
    return label if n >= 0.6 * sum(counts.values()) else None


def latin_language(text: str) -> str | None:
    """Among en/fr/de/es/it/pt/nl, the language whose stop words clearly dominate, else None.

    Needs at least 3 stop-word hits and 1.5 times as many as the runner-up."""
    words = [w.casefold() for w in _TOKEN.findall(text)]
    votes = Counter({lang: sum(1 for w in words if w in vocab) for lang, vocab in _WORDS.items()})
    ranked = votes.most_common(2)
    (top, n1), (_, n2) = ranked[0], ranked[1]
    if n1 >= 3 and n1 >= 1.5 * max(n2, 1):
        return top
    return None


def mismatch(person: str, fact: str) -> str | None:
    """Why ``fact`` is not in the language of ``person``'s text, or None if it may well be."""
    s_person, s_fact = script(person), script(fact)
    if s_person and s_fact and s_person != s_fact:
        return f"fact written in {s_fact} script, the person writes in {s_person}"
    if s_person == s_fact == "latin":
        l_person, l_fact = latin_language(person), latin_language(fact)
        if l_person and l_fact and l_person != l_fact:
            return f"fact written in '{l_fact}', the person writes in '{l_person}'"
    return None
