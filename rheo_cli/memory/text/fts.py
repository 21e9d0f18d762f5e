"""Turning text a person typed into safe search terms: FTS5 strings, which both stores take.

User text never reaches a search raw: FTS5 syntax (``AND``, ``-x``, ``a:b``, ``*``, ``(``, quotes)
would raise or change meaning. Each word becomes a double-quoted string, which FTS5 runs through
the table's own tokenizer, so ``C++`` searches ``c`` and ``a:b`` the phrase ``a b``. Only two
operators survive, on purpose: a ``"quoted phrase"`` stays a phrase, and a trailing ``*`` on a
word (``deploy*``) is a prefix search.
"""

from __future__ import annotations

import re

CJK_RUN = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u0e00-\u0e7f]+"
)
"""A run of characters from scripts written without spaces between words (the word index
cannot split them; the trigram index can)."""
_PHRASE = re.compile(r'"([^"]*)"')
_WORD_CHAR = re.compile(r"\w", re.UNICODE)
_CONTROL = re.compile("[\x00-\x1f\x7f\ud800-\udfff]")
"""Controls (a NUL would end the expression) and lone surrogates (SQLite cannot take them)."""


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


MAX_TERMS = 64
"""At most this many terms are taken from a text (a pasted document is not a query)."""
MAX_QUERY_CHARS = 20_000


def terms(text: str) -> list[str]:
    """Split text into FTS5-safe terms: quoted phrases and words, in order, deduplicated.

    Each returned term is already a valid FTS5 string (``"word"``, ``"two words"`` or
    ``"pre"*``). Words without any letter or digit (``*``, ``(``, ``-``, emoji alone) are dropped.
    Only the first `MAX_QUERY_CHARS` characters and `MAX_TERMS` terms count.
    """
    text = _CONTROL.sub(" ", text[:MAX_QUERY_CHARS])
    out: list[str] = []
    seen: set[str] = set()

    def add(term: str) -> None:
        if term.lower() not in seen:
            seen.add(term.lower())
            out.append(term)

    def words(chunk: str) -> None:
        for word in chunk.split():
            prefix = word.endswith("*")
            core = word.rstrip("*").strip("\"'`()[]{}<>,;!?")
            if core.lower().endswith(("'s", "’s")) and len(core) > 3:  # possessive
                core = core[:-2]
            if not _WORD_CHAR.search(core):
                continue
            add(_quote(core) + ("*" if prefix and re.fullmatch(r"\w+", core) else ""))

    pos = 0
    for match in _PHRASE.finditer(text):
        words(text[pos : match.start()])
        phrase = " ".join(match.group(1).split())
        if _WORD_CHAR.search(phrase):
            add(_quote(phrase))
        pos = match.end()
    words(text[pos:].replace('"', " "))
    return out[:MAX_TERMS]
