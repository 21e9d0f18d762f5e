"""Reading the person's message from arguments and/or piped stdin."""

from __future__ import annotations

import sys
from typing import BinaryIO

from ..errors import UsageError
from .errors import say_error

MAX_STDIN_BYTES = 32 * 1024 * 1024
"""The most rheo reads from stdin (bytes): larger input is refused, not truncated."""
_CHUNK = 1024 * 1024


def read_stdin(stream: BinaryIO | None = None) -> str | None:
    """Piped stdin as text, or None when stdin is a terminal or absent.

    UTF-8 is expected; other bytes are kept losslessly by reading the whole input as Latin-1
    (every byte maps to one character), with a note on stderr. Input with NUL bytes is binary
    and refused with a UsageError, as is input over `MAX_STDIN_BYTES` (both noticed while
    reading, so ``< /dev/zero`` fails at once).
    """
    if stream is None:
        if sys.stdin is None or sys.stdin.closed:
            return None
        if sys.stdin.isatty():
            return None
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:
            return sys.stdin.read()
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            break
        if b"\x00" in chunk:
            raise UsageError("stdin holds binary data (NUL bytes); pipe text to rheo")
        size += len(chunk)
        if size > MAX_STDIN_BYTES:
            raise UsageError(f"stdin is larger than {MAX_STDIN_BYTES // (1024 * 1024)} MB")
        chunks.append(chunk)
    data = b"".join(chunks)
    if not data:
        return ""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        say_error("stdin is not valid UTF-8; read it as Latin-1 so that no byte is lost")
        return data.decode("latin-1")


def clean_arg(arg: str) -> str:
    """A command-line argument as text: bytes that were not UTF-8 (which Python keeps as
    surrogates) are read as Latin-1 instead, losslessly."""
    if not any(0xDC80 <= ord(ch) <= 0xDCFF for ch in arg):
        return arg
    raw = arg.encode("utf-8", "surrogateescape")
    say_error("an argument is not valid UTF-8; read it as Latin-1 so that no byte is lost")
    return raw.decode("latin-1")


def compose(args: list[str] | None, piped: str | None) -> str:
    """The message: the arguments joined by spaces, then piped text as a document after them.

    Raises UsageError when both are empty or blank.
    """
    question = " ".join(clean_arg(a) for a in args or []).strip()
    document = (piped or "").strip("\n")
    if question and document.strip():
        return f"{question}\n\n<stdin>\n{document}\n</stdin>"
    if question:
        return question
    if document.strip():
        return document
    raise UsageError("nothing to ask: give a question as arguments or pipe it on stdin")
