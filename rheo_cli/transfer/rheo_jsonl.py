"""rheo's export format: JSON Lines, one record per line, a header line first.

The header is ``{"type": "header", "format": "rheo-export", "version": 1, "profiles": [...]}``
(version 2 when the file holds knowledge-base records, 3 when it holds memory items of one
assistant); the records follow (see
`rheo_cli.memory.archive` and `rheo_cli.memory.exchange`). Lines are written with sorted keys
and no extra spaces, so the same store always exports to the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import IO, Any

from ..memory import archive
from ..memory.text.safety import json_escape

NAME = "rheo"


class FormatError(ValueError):
    """A line of the file is not a valid record; the message names the line."""


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


def sniff(first_line: bytes) -> bool:
    """True when ``first_line`` is a rheo export header."""
    try:
        head = json.loads(first_line.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError):
        return False
    return isinstance(head, dict) and head.get("format") == archive.FORMAT


def read(data: IO[bytes]) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, record)`` for each line of a rheo export, header checked first.

    Raises FormatError naming the first bad line: not UTF-8, not a JSON object, no header,
    or a version newer than this rheo reads. Blank lines are skipped."""
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
