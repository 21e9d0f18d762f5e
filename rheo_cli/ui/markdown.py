"""Replies rendered as Markdown on a terminal: every heading at the left margin (rich
centres ``#`` headings) and no blank lines at a block's edges (rich opens a list with one),
so blocks stand one blank line apart, as in the text."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

from rich.markdown import Heading, Markdown
from rich.segment import Segment


class LeftHeading(Heading):
    """A Markdown heading at the left margin, whatever its level."""

    LEVEL_ALIGN: ClassVar[dict[str, Any]] = dict.fromkeys(
        ("h1", "h2", "h3", "h4", "h5", "h6"), "left"
    )


class ReplyMarkdown(Markdown):
    """rich's Markdown with `LeftHeading` headings."""

    elements: ClassVar[dict[str, Any]] = {**Markdown.elements, "heading_open": LeftHeading}


class Trimmed:
    """A renderable without the blank lines its first and last lines would be."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __rich_console__(self, console: Any, options: Any) -> Iterator[Segment]:
        """The inner renderable's lines, blank ones at either end dropped."""
        lines = console.render_lines(self.inner, options, pad=False)

        def blank(line: list[Segment]) -> bool:
            return not "".join(s.text for s in line).strip()

        while lines and blank(lines[0]):
            lines.pop(0)
        while lines and blank(lines[-1]):
            lines.pop()
        for line in lines:
            yield from line
            yield Segment.line()


def render(text: str) -> Trimmed:
    """``text`` (already made safe for the terminal) as a reply block to print."""
    return Trimmed(ReplyMarkdown(text))
