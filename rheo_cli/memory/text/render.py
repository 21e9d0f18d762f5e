"""Rendering stored text into injected context lines that can never forge a section.

Stored text is data. Sections are delimited by ``=== NAME ===`` header lines and the ``---`` line
before the person's message, always at the start of a line. Every injected entry starts with a
prefix rheo chose (``- ``, ``[date]``) and every further line of it is indented, so no stored
line can begin a line of the prompt; runs of ``=`` are also broken up (``= = =``) so a header
cannot appear mid-line either, and a line of dashes cannot pass for the ``---`` separator.

Every kind of line break counts: ``\n``, ``\r``, VT, FF, the file/group/record separators,
NEL (U+0085) and U+2028/U+2029 (what `str.splitlines` splits at). A stored string that goes
*into* a prefix (a document's title, a heading, a topic) is made one line first (`inline`):
`entry` does that to its prefix, so each line builder is covered by calling it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .safety import INVISIBLE
from .tokens import estimate

_INVISIBLE = INVISIBLE
"""Characters that show nothing (`safety.INVISIBLE`); between ``=`` signs they would hide a
run of them."""
_EQUAL_SIGN = "=\ufe66\uff1d\u207c\u208c"
"""``=`` and the characters NFKC folds into it (small, fullwidth, super- and subscript)."""
_EQUALS = re.compile(f"[{_EQUAL_SIGN}](?:[{_INVISIBLE}]*[{_EQUAL_SIGN}]){{2,}}")
_EQUAL_ONE = re.compile(f"[{_EQUAL_SIGN}]")
_DASHES = re.compile(r"^(\s*)(-{3,})", re.M)
_BLANKS = re.compile(r"\n\s*\n+")
INDENT = "    "


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 turn``, ``2 turns``, ``1,204 records`` (``nouns``: the plural when it is not
    ``noun`` + s)."""
    return f"{count:,} {noun if count == 1 else (nouns or noun + 's')}"


def escape(text: str) -> str:
    """Neutralise section markers in stored text: a run of three or more ``=`` (also
    fullwidth or small ones, also with invisible characters between them) becomes
    ``= = =``, and a line starting with ``---`` starts with ``- - -`` instead."""
    text = _EQUALS.sub(lambda m: " ".join("=" * len(_EQUAL_ONE.findall(m.group(0)))), text)
    return _DASHES.sub(lambda m: m.group(1) + " ".join(m.group(2)), text)


def inline(text: str) -> str:
    """Stored text to put inside one line rheo builds (a title, a heading, a topic): every
    line break (any kind, see the module docstring) becomes a space, then `escape`."""
    return escape(" ".join(text.splitlines()))


def entry(prefix: str, text: str) -> str:
    """One injected entry: ``prefix`` + escaped text, continuation lines indented.

    ``prefix`` may hold stored strings (a document title, a topic): it is made one line and
    escaped too (`inline`). Blank-line runs collapse to one line break; trailing whitespace
    is dropped.
    """
    prefix = inline(prefix)
    # Every kind of line break counts (\v, \f, U+2028...): each starts an indented line.
    unified = "\n".join(text.splitlines())
    body = _BLANKS.sub("\n", escape(unified)).strip()
    lines = body.split("\n") if body else [""]
    head = prefix + lines[0].rstrip()
    rest = [INDENT + ln.strip() for ln in lines[1:] if ln.strip()]
    return "\n".join([head, *rest])


def clip(text: str, max_tokens: int, *, marker: str = "") -> str:
    """Shorten ``text`` to about ``max_tokens`` by cutting its middle.

    Keeps the head (two thirds) and the tail (one third) and puts
    ``[… N characters left out{marker} …]`` between them. Text within the limit is returned
    unchanged.
    """
    if estimate(text) <= max_tokens:
        return text
    ratio = max_tokens / max(1, estimate(text))
    keep = max(40, int(len(text) * ratio) - 40)
    head_n = (keep * 2) // 3
    tail_n = keep - head_n
    omitted = len(text) - head_n - tail_n
    return f"{text[:head_n].rstrip()} [… {omitted} characters left out{marker} …] " + (
        text[-tail_n:].lstrip() if tail_n > 0 else ""
    )


_SENTENCE = re.compile(r"(?<=[.!?…])\s+|\n+")


def snippet(text: str, max_tokens: int, hits: Callable[[int, int], int]) -> str:
    """``text`` cut to about ``max_tokens`` by keeping the sentences with the most ``hits``
    (``hits(start, end)``: query words found in ``text[start:end]``, counted by the caller),
    in their original order, with ``…`` where text was left out. Text within the limit is
    returned unchanged; with no matching sentence, the head and tail are kept (`clip`).
    """
    if estimate(text) <= max_tokens:
        return text
    spans: list[tuple[int, int]] = []
    start = 0
    for boundary in _SENTENCE.finditer(text):
        if text[start : boundary.start()].strip():
            spans.append((start, boundary.start()))
        start = boundary.end()
    if text[start:].strip():
        spans.append((start, len(text)))
    counts = [hits(a, b) for a, b in spans]
    order = sorted(range(len(spans)), key=lambda i: (-counts[i], i))
    chosen: list[int] = []
    used = 0
    for i in order:
        if chosen and not counts[i]:
            break
        a, b = spans[i]
        cost = estimate(text[a:b]) + 1
        if used + cost > max_tokens:
            continue
        chosen.append(i)
        used += cost
    if not chosen or not counts[chosen[0]]:
        return clip(text, max_tokens)
    chosen.sort()
    parts: list[str] = []
    last = -1
    for i in chosen:
        if i != last + 1:
            parts.append("…")
        a, b = spans[i]
        parts.append(text[a:b].strip())
        last = i
    if last != len(spans) - 1:
        parts.append("…")
    return " ".join(parts)
