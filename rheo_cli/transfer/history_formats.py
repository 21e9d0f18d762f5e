"""Other tools' chat history rheo reads: the ``llm`` CLI's ``logs.db``, a
ChatGPT data export and a Claude.ai data export.

Each format has a parser (`llm`, `chatgpt`, `claude_ai`) that reads the file into neutral
`Conversation` objects (messages with their original times and stable source keys) and
touches nothing; `rheo_cli.memory.archive.history.import_history` then writes them in one
transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..memory.archive.history import Parsed

FORMATS = ("llm", "chatgpt", "claude")
"""The history formats rheo imports (``rheo import-history FORMAT FILE``)."""


def parser_for(fmt: str) -> Callable[[Path], Parsed]:
    """The parser of format ``fmt`` (one of `FORMATS`); raises KeyError for another name."""
    if fmt == "llm":
        from .llm import parse as parse_llm

        return parse_llm
    if fmt == "chatgpt":
        from .chatgpt import parse as parse_chatgpt

        return parse_chatgpt
    if fmt == "claude":
        from .claude_ai import parse as parse_claude

        return parse_claude
    raise KeyError(fmt)


SQLITE_MAGIC = b"SQLite format 3\x00"


def sniff(path: Path) -> str | None:
    """Guess the format of ``path`` from its first bytes: ``llm`` for an SQLite file,
    ``chatgpt`` for JSON with ``"mapping"`` nodes, ``claude`` for JSON with
    ``"chat_messages"``; None when it looks like none of them."""
    with path.open("rb") as handle:
        head = handle.read(1 << 16)
    if head.startswith(SQLITE_MAGIC):
        return "llm"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if not text.startswith(b"["):
        return None
    chatgpt = head.find(b'"mapping"')
    claude = head.find(b'"chat_messages"')
    found = [(pos, name) for pos, name in ((chatgpt, "chatgpt"), (claude, "claude")) if pos >= 0]
    return min(found)[1] if found else None
