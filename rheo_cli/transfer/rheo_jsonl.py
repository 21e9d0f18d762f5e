"""rheo's own export (and a PostgreSQL backup): JSON Lines, one record per line, a header first.

The header is ``{"type": "header", "format": "rheo-export", "version": 1, "profiles": [...]}``
(the version: `rheo_cli.memory.archive.keys.version_for`, at most `archive.VERSION`); the
records follow (see `rheo_cli.memory.archive`). Lines are written with sorted keys and no extra
spaces, so the same store always exports to the same bytes. Recognised by content: a first
line that is this header, whatever the file is called (stdin too).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..errors import UsageError
from ..memory import archive
from ..memory.store import crash
from ..memory.store.private_file import new_private_file
from ..memory.text.safety import json_escape
from .source import Source, outline

NAME = "rheo"


class FormatError(ValueError):
    """A line of the file is not a valid record; the message names the line."""


@dataclass
class Records:
    """A rheo export as it is read: ``(line number, record)`` pairs for
    `archive.import_records`, the header checked first; iterating raises FormatError at the
    first bad line (then nothing is imported: the import is one transaction)."""

    lines: Iterator[tuple[int, dict[str, Any]]]


def dumps(record: dict[str, Any]) -> str:
    """One record as one line of text (no newline). Characters a terminal or a line reader
    would act on or hide (C1 controls, bidi overrides, zero-width and tag characters, line and
    paragraph separators, lone surrogates: `safety.json_escape`) are JSON-escaped, so the file
    is safe to print and no reader splits a record; the values read back are the same."""
    text = json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return json_escape(text)


def write(records: Iterable[dict[str, Any]], out: IO[str]) -> int:
    """Write ``records`` to ``out``, one per line; returns how many."""
    n = 0
    for record in records:
        out.write(dumps(record) + "\n")
        n += 1
    return n


def write_file(
    records: Iterable[dict[str, Any]],
    output: Path,
    *,
    point: str | None = None,
    replace: bool = False,
) -> int:
    """Write ``records`` to the new file ``output`` (mode 0600), which never exists
    half-written (`new_private_file`); returns how many records. ``point``: a crash point
    reached when every record is written, before the file takes its name; ``replace``: an
    existing file is replaced once the new one is whole. Raises StoreError when ``output``
    exists (unless ``replace``) or cannot be written."""
    with new_private_file(output, replace=replace) as partial:
        with open(partial, "w", encoding="utf-8") as out:
            count = write(records, out)
        if point:
            crash.reach(point)
        return count


def sniff(first_line: bytes) -> bool:
    """True when ``first_line`` is a rheo export header."""
    try:
        head = json.loads(first_line.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False
    return isinstance(head, dict) and head.get("format") == archive.FORMAT


def detect(source: Source) -> float:
    """How surely ``source`` is a rheo export (0 or 1): its first line is the header. A file
    or stdin only."""
    if source.kind not in ("file", "stdin"):
        return 0.0
    if outline(source.head).shape != "object":
        return 0.0
    return 1.0 if sniff(source.head.split(b"\n", 1)[0]) else 0.0


def read(source: Source) -> Records:
    """The records of a rheo export (a file or stdin), as `Records`. Raises UsageError for a
    folder or an archive."""
    if source.kind not in ("file", "stdin"):
        raise UsageError(f"{source.label()} is a {source.kind}: a rheo export is one file")
    return Records(read_lines(source.stream()))


def read_lines(data: IO[bytes]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` for each line of a rheo export, header checked first.

    Raises FormatError naming the first bad line: not UTF-8, not a JSON object, no header,
    or a version newer than this rheo reads (`archive.VERSION`). Blank lines are skipped."""
    seen_header = False
    for number, raw in enumerate(data, start=1):
        if not raw.strip():
            continue
        try:
            text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            record = json.loads(text)
        except UnicodeDecodeError:
            raise FormatError(f"line {number}: not UTF-8 text") from None
        except ValueError as exc:
            raise FormatError(f"line {number}: not valid JSON ({exc.args[0]})") from None
        except RecursionError:
            raise FormatError(f"line {number}: JSON nested too deeply") from None
        if not isinstance(record, dict):
            raise FormatError(f"line {number}: a record must be a JSON object")
        if not seen_header:
            if record.get("type") != "header" or record.get("format") != archive.FORMAT:
                raise FormatError(f"line {number}: not a rheo export (no header line)")
            version = record.get("version")
            if not isinstance(version, int) or version > archive.VERSION:
                raise FormatError(
                    f"line {number}: export format version {version!r}; this rheo reads "
                    f"up to {archive.VERSION}"
                )
            seen_header = True
        yield number, record
    if not seen_header:
        raise FormatError("the file is empty: no rheo export header")
