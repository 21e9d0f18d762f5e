"""Cutting a document into chunks: by Markdown heading, then by size at paragraph breaks."""

from __future__ import annotations

import re
from dataclasses import dataclass

CHUNK_CHARS = 1200
"""Largest chunk (characters, about 300 tokens): small enough to inject a few per message."""

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")


@dataclass(frozen=True)
class Chunk:
    """A piece of a document: ``heading`` is the path of headings above it ("Setup > Install",
    or "" before the first heading), ``content`` its text."""

    heading: str
    content: str


def _pieces(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, cut at paragraph breaks, then line
    breaks, then spaces."""
    text = text.strip()
    out: list[str] = []
    while len(text) > limit:
        window = text[:limit]
        cut = window.rfind("\n\n")
        if cut < limit // 3:
            cut = window.rfind("\n")
        if cut < limit // 3:
            cut = window.rfind(" ")
        if cut < limit // 3:
            cut = limit
        out.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        out.append(text)
    return [p for p in out if p]


def chunk_document(text: str, *, markdown: bool = True, limit: int = CHUNK_CHARS) -> list[Chunk]:
    """The chunks of a document, in order. Markdown is cut at headings (``#`` lines outside
    code fences), each section further cut to at most ``limit`` characters; plain text is cut
    by size alone. A heading with nothing under it (neither text nor a deeper heading) gives a
    chunk of its own title, so a document of headings alone is searchable; a blank section
    under a heading with deeper ones gives none."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if not markdown:
        return [Chunk("", p) for p in _pieces(text, limit)]
    chunks: list[Chunk] = []
    path: list[tuple[int, str]] = []
    body: list[str] = []
    in_fence = False

    def flush(next_level: int) -> None:
        heading = " > ".join(title for _, title in path)
        pieces = _pieces("\n".join(body), limit)
        if not pieces and path and next_level <= path[-1][0]:
            # A heading with nothing under it (no text, no deeper heading) is text too.
            pieces = _pieces(path[-1][1], limit)
        for piece in pieces:
            chunks.append(Chunk(heading, piece))
        body.clear()

    for line in text.split("\n"):
        if _FENCE.match(line):
            in_fence = not in_fence
        match = None if in_fence else _HEADING.match(line)
        if match:
            level = len(match.group(1))
            flush(level)
            path[:] = [(lv, t) for lv, t in path if lv < level]
            path.append((level, match.group(2).strip()))
            continue
        body.append(line)
    flush(0)
    return chunks
