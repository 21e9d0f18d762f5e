"""``rheo ask -f PATH``: text files given as documents after the question, each with its
name (`app.attachments`, which the REPL's ``/file`` uses too)."""

from __future__ import annotations

from pathlib import Path

from ..app.attachments import MAX_ATTACHED_BYTES
from ..app.attachments import attach as attach_files
from .inputs import file_arg, text_of

__all__ = ["MAX_ATTACHED_BYTES", "attach"]


def attach(message: str, files: list[Path]) -> str:
    """``message`` followed by each file as ``<file name="NAME">…</file>`` (NAME as given
    on the command line). Raises UsageError for a missing, unreadable, binary, non-UTF-8 or
    too large file (nothing is sent)."""
    return attach_files(message, [(file_arg(path), text_of(path)) for path in files])
