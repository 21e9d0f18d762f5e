"""``rheo ask -f PATH``: text files given as documents after the question, each with its
name, so the model can tell them apart and the stored question shows what was given."""

from __future__ import annotations

from pathlib import Path

from .inputs import file_arg, text_of

MAX_ATTACHED_BYTES = 2 * 1024 * 1024
"""The most one attached file may hold (2 MB): more belongs in ``rheo kb add``."""


def attach(message: str, files: list[Path]) -> str:
    """``message`` followed by each file as ``<file name="NAME">…</file>`` (NAME as given
    on the command line). Raises UsageError for a missing, unreadable, binary, non-UTF-8 or
    too large file (nothing is sent)."""
    from ..errors import UsageError
    from .kb_cmd import read_text

    parts = [message] if message else []
    for path in files:
        opened = file_arg(path)
        if opened.is_file() and opened.stat().st_size > MAX_ATTACHED_BYTES:
            raise UsageError(
                f"{text_of(path)} is larger than {MAX_ATTACHED_BYTES // 2**20} MB: "
                "add it to the knowledge base with 'rheo kb add' instead"
            )
        body = read_text(opened).strip("\n")
        name = text_of(path).replace('"', "'")
        parts.append(f'<file name="{name}">\n{body}\n</file>')
    return "\n\n".join(parts)
