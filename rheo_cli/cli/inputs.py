"""Reading the person's message from arguments and/or piped stdin."""

from __future__ import annotations

import sys
from typing import BinaryIO

from ..errors import UsageError
from .errors import say_error


def read_stdin(stream: BinaryIO | None = None) -> str | None:
    """Piped stdin as text, or None when stdin is a terminal or absent.

    UTF-8 is expected; other bytes are kept losslessly by reading the whole input as Latin-1
    (every byte maps to one character), with a note on stderr. Input with NUL bytes is binary
    and refused with a UsageError.
    """
    if stream is None:
        if sys.stdin is None or sys.stdin.closed:
            return None
        if sys.stdin.isatty():
            return None
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:
            return sys.stdin.read()
    data = stream.read()
    if not data:
        return ""
    if b"\x00" in data:
        raise UsageError("stdin holds binary data (NUL bytes); pipe text to rheo")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        say_error("stdin is not valid UTF-8; read it as Latin-1 so that no byte is lost")
        return data.decode("latin-1")


def compose(args: list[str] | None, piped: str | None) -> str:
    """The message: the arguments joined by spaces, then piped text as a document after them.

    Raises UsageError when both are empty or blank.
    """
    question = " ".join(args or []).strip()
    document = (piped or "").strip("\n")
    if question and document.strip():
        return f"{question}\n\n<stdin>\n{document}\n</stdin>"
    if question:
        return question
    if document.strip():
        return document
    raise UsageError("nothing to ask: give a question as arguments or pipe it on stdin")
