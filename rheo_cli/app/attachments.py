"""Text files given with a message (``rheo ask -f PATH``, the REPL's ``/file PATH``): each
becomes a document after the question, with its name, so the model can tell them apart and
the stored question shows what was given."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import UsageError
from .text import safe

MAX_ATTACHED_BYTES = 2 * 1024 * 1024
"""The most one attached file may hold (2 MB): more belongs in ``rheo kb add``."""

MAX_FILE_BYTES = 20 * 1024 * 1024
"""The most `read_text` reads of one file (20 MB, the knowledge base's limit)."""


def read_text(path: Path, name: str | None = None) -> str:
    """The UTF-8 text of ``path`` (a leading BOM dropped). Raises UsageError, naming the
    file by ``name`` (default: the path), for a missing, unreadable, binary (NUL bytes),
    non-UTF-8 or larger than `MAX_FILE_BYTES` file, or one that is not a regular file."""
    shown = safe(name if name is not None else str(path))
    try:
        info = path.stat()
        if not path.is_file():
            raise UsageError(f"{shown} is not a file")
        if info.st_size > MAX_FILE_BYTES:
            raise UsageError(f"{shown} is larger than {MAX_FILE_BYTES // 2**20} MB")
        data = path.read_bytes()
    except FileNotFoundError:
        raise UsageError(f"no such file: {shown}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {shown}: {exc.strerror or exc}") from None
    if b"\x00" in data:
        raise UsageError(f"{shown} is not a text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UsageError(f"{shown} is not UTF-8 text") from None


def attached(path: Path, name: str | None = None) -> str:
    """One file as the model and the ledger get it: ``<file name="NAME">\\nTEXT\\n</file>``
    (NAME as given, default the path; double quotes in it become single ones). Raises
    UsageError as `read_text` does, and for a file over `MAX_ATTACHED_BYTES`."""
    shown = name if name is not None else str(path)
    if path.is_file() and path.stat().st_size > MAX_ATTACHED_BYTES:
        raise UsageError(
            f"{safe(shown)} is larger than {MAX_ATTACHED_BYTES // 2**20} MB: "
            "add it to the knowledge base with 'rheo kb add' instead"
        )
    body = read_text(path, shown).strip("\n")
    return f'<file name="{shown.replace(chr(34), chr(39))}">\n{body}\n</file>'


def attach(message: str, files: Sequence[tuple[Path, str]]) -> str:
    """``message`` followed by each file (``(path to open, name to show)``) as `attached`
    gives it, separated by blank lines. Raises UsageError for the first file that cannot be
    attached (nothing is sent)."""
    parts = [message] if message else []
    parts += [attached(path, name) for path, name in files]
    return "\n\n".join(parts)
