"""What every reader of another program's chat history shares: its error, and the helpers that
build the neutral shape the engine imports (`rheo_cli.memory.archive.history`: `Parsed`
conversations of `Message`), whatever program the history came from."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, Any

from ..errors import UsageError
from ..memory.archive.history import Conversation, Message, Parsed
from ..memory.text.render import plural
from .source import Source, Unreadable, outline


class MalformedHistory(UsageError):
    """The file is not the format it was read as; the message names the file and the line,
    conversation or message at fault. Raised before anything is written."""


def add_message(
    conversation: Conversation,
    role: str,
    content: str,
    when: datetime,
    key: str,
    model: str | None,
    seen: set[str],
    skipped: Counter[str],
) -> None:
    """Append a message to ``conversation`` unless it is empty or its key was already seen
    in this file (counted in ``skipped``); its time is clamped so the order never goes back."""
    text = content.strip()
    if not text:
        skipped["empty message"] += 1
        return
    if key in seen:
        skipped["duplicate message id in the file"] += 1
        return
    seen.add(key)
    if conversation.messages and when < conversation.messages[-1].when:
        when = conversation.messages[-1].when
    conversation.messages.append(Message(role, text, when, key, model))


def load_json_list(source: Source, member: str | None = None) -> list[Any]:
    """The JSON array in a file source, or in one file (``member``) of a folder or an
    archive. Raises MalformedHistory naming the file and the line and column of a syntax
    error, or saying what the top level is instead of a list; Unreadable when it cannot be
    read."""
    label = source.label(member)
    try:
        with source.open_member(member) if member is not None else _borrowed(source) as handle:
            data = json.load(handle)
    except json.JSONDecodeError as exc:
        raise MalformedHistory(
            f"{label}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except UnicodeDecodeError as exc:
        raise MalformedHistory(f"{label}: not UTF-8 text ({exc.reason})") from None
    except RecursionError:
        raise MalformedHistory(f"{label}: JSON nested too deeply") from None
    if not isinstance(data, list):
        raise MalformedHistory(
            f"{label}: expected a JSON list of conversations, found {type(data).__name__}"
        )
    return data


@contextmanager
def _borrowed(source: Source) -> Iterator[IO[bytes]]:
    """The source's own stream (closed with the source, not here)."""
    yield source.stream()


def where(label: str, index: int, conversation: Any) -> str:
    """``FILE: conversation N ("title")`` for error messages (N counts from 1)."""
    title = ""
    if isinstance(conversation, dict):
        for name in ("title", "name", "id", "uuid"):
            value = conversation.get(name)
            if isinstance(value, str) and value.strip():
                title = f" ({' '.join(value.split())[:60]!r})"
                break
    return f"{label}: conversation {index + 1}{title}"


SINGLE = "conversations.json"
"""The one file of conversations of a ChatGPT export before 2026, and of a Claude.ai export."""

SHARD = re.compile(r"conversations-(\d+)\.json")
"""A part of a sharded ChatGPT export (2026): ``conversations-000.json``, ``-001``, ... each a
JSON array of conversations, numbered from 0."""


def conversation_files(source: Source) -> list[str]:
    """The files of conversations in an export folder or archive: at the shallowest level
    holding any, its ``conversations-NNN.json`` parts in number order, or else its
    ``conversations.json``. Empty when there is none (or the source is a single file)."""
    by_folder: dict[str, list[str]] = {}
    for member in source.members():
        folder, _, name = member.rpartition("/")
        if SHARD.fullmatch(name) or name == SINGLE:
            by_folder.setdefault(folder, []).append(member)
    if not by_folder:
        return []
    folder = min(by_folder, key=lambda f: (f.count("/") + (1 if f else 0), f))
    found = by_folder[folder]
    parts = [m for m in found if part_number(m) is not None]
    if parts:
        return sorted(parts, key=lambda m: part_number(m) or 0)
    return found


def part_number(name: str) -> int | None:
    """The number of a ``conversations-NNN.json`` part (its folders ignored), else None."""
    match = SHARD.fullmatch(name.rpartition("/")[2])
    return int(match[1]) if match else None


def json_files(source: Source) -> list[str | None]:
    """What a reader of JSON conversations reads: the file (or stdin) itself (``[None]``), or
    the conversation files of a folder or an archive (`conversation_files`). Raises
    MalformedHistory when a folder or an archive holds none."""
    if source.kind in ("file", "stdin"):
        return [None]
    found = conversation_files(source)
    if not found:
        raise MalformedHistory(
            f"{source.label()} holds no {SINGLE} and no conversations-NNN.json (looked at "
            f"{plural(len(source.members()), 'file')})"
        )
    return list(found)


def first_keys(source: Source) -> tuple[str, ...] | None:
    """The keys of the first conversation of a JSON source (a file or stdin, or the first
    non-empty conversation file of a folder or an archive), read from the first bytes only;
    None when it is not a JSON array of objects (or is empty)."""
    if source.kind in ("file", "stdin"):
        found = outline(source.head)
        return found.keys if found.shape == "array" and found.items == "object" else None
    if source.kind not in ("folder", "zip"):
        return None
    for member in conversation_files(source):
        try:
            found = outline(source.member_head(member))
        except Unreadable:
            return None
        if found.shape == "array" and found.items == "object":
            return found.keys
        if found.shape != "array" or found.items != "none":
            return None
    return None


@dataclass
class History:
    """Another program's chat history as read: what the engine imports (``parsed``), and
    notes for the person (one line each, e.g. that a file is one part of an export)."""

    parsed: Parsed
    notes: list[str] = field(default_factory=list)
