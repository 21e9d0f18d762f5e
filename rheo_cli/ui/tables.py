"""Listings as tables that fit the terminal: a header row, short columns kept whole, the
text column taking the width that is left and ending in ``…`` rather than wrapping.

The width is the terminal's (``COLUMNS`` when set, as rich reads it; 80 into a pipe), so a
200-column terminal shows long previews and 60 columns still shows one line per row."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .output import safe


@dataclass(frozen=True)
class Column:
    """One column: its ``header``; a ``text`` column shares the width left over (cut with
    ``…``); the others are as wide as their longest cell, up to ``most`` characters (and,
    ``shrinks``, a fifth of the terminal's width); ``right`` aligns numbers."""

    header: str
    text: bool = False
    right: bool = False
    most: int = 26
    shrinks: bool = False


def flat(value: str) -> str:
    """``value`` on one line (whitespace collapsed) as `output.safe` shows it."""
    return " ".join(safe(value).split())


def print_table(columns: Sequence[Column], rows: Iterable[Sequence[str]]) -> None:
    """Print ``rows`` (one string per column) under a header row on stdout, one line each,
    fitted to the terminal's width (see the module's note); no line ends in spaces."""
    sys.stdout.write("".join(line + "\n" for line in table_lines(columns, rows)))


def table_lines(columns: Sequence[Column], rows: Iterable[Sequence[str]]) -> list[str]:
    """The lines `print_table` prints (header first), none ending in spaces; each cell as
    `flat` shows it."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(file=sys.stdout, highlight=False, markup=False, emoji=False)
    console.width = max(console.width, 30)
    cells = [[flat(cell) for cell in row] for row in rows]
    share = max(10, console.width // 5)  # no short column takes more than a fifth
    table = Table(box=None, show_header=True, header_style="", pad_edge=False, expand=True)
    for i, col in enumerate(columns):
        natural = max([len(col.header), *(len(row[i]) for row in cells)])
        table.add_column(
            col.header,
            no_wrap=True,
            overflow="ellipsis",
            ratio=1 if col.text else None,
            width=None if col.text else min(natural, col.most, share if col.shrinks else natural),
            justify="right" if col.right else "left",
        )
    for row in cells:
        table.add_row(*(Text(cell) for cell in row))
    with console.capture() as captured:
        console.print(table)
    return [line.rstrip() for line in captured.get().splitlines()]
