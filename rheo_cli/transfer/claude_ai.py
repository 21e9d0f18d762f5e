"""A Claude.ai data export (Settings → Privacy → Export data): ``conversations.json``, a bare
JSON array of conversations (``uuid``, ``name``, ``created_at``, and since 2025-2026 also
``summary``, ``model``, ``settings``, ``project_uuid``, ``current_leaf_message_uuid``...), each
with its ``chat_messages`` in order: ``uuid``, ``sender`` (``human`` or ``assistant``),
``text`` (or, when that is empty, ``content`` blocks of type ``text``), ``created_at``
(ISO 8601), and ``attachments``/``files``/``files_v2`` the person added. Given as the zip
archive, its unpacked folder, or the file itself (whatever it is called).

An attachment is recorded by its file name only (``[attachment: notes.pdf]``); tool use,
thinking and other non-text blocks are left out. A null or empty ``name`` is an untitled
conversation; a message without ``created_at`` takes the time of the one before it (or the
conversation's).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ..memory.archive.history import Conversation, Parsed
from ..memory.store.errors import InvalidInput
from ..memory.store.timeutil import parse_instant
from .history import (
    History,
    MalformedHistory,
    add_message,
    first_keys,
    json_files,
    load_json_list,
    where,
)
from .source import Source

NAME = "claude"

ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


def _time(value: Any, here: str) -> datetime | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise MalformedHistory(f"{here}: created_at {value!r} is not a date-time")
    try:
        return parse_instant(value, default_tz=UTC).astimezone(UTC)
    except InvalidInput as exc:
        raise MalformedHistory(f"{here}: {exc}") from None


def _text(message: dict[str, Any], here: str) -> str:
    raw = message.get("text")
    if raw is not None and not isinstance(raw, str):
        raise MalformedHistory(f"{here}: 'text' is not a string")
    text: str = raw or ""
    if not text.strip():
        blocks = message.get("content") or []
        if not isinstance(blocks, list):
            raise MalformedHistory(f"{here}: 'content' is not a list")
        text = "\n\n".join(
            b["text"]
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
        )
    names = []
    for field in ("attachments", "files", "files_v2"):
        for item in message.get(field) or []:
            if isinstance(item, dict) and isinstance(item.get("file_name"), str):
                names.append(item["file_name"])
    if names and text.strip():
        text += "\n\n" + "\n".join(f"[attachment: {n}]" for n in dict.fromkeys(names))
    return text


def detect(source: Source) -> float:
    """How surely ``source`` is a Claude.ai export (0 to 1), by content: a JSON array whose
    first conversation has ``chat_messages`` (a file, or the ``conversations.json`` of a
    folder or an archive)."""
    keys = first_keys(source)
    return 1.0 if keys is not None and "chat_messages" in keys else 0.0


def read(source: Source) -> History:
    """Read a Claude.ai export: a zip archive or folder (its ``conversations.json``) or one
    JSON file. Keys: ``claude:<uuid>`` of the conversation and of each message. Raises
    MalformedHistory naming the conversation (and message number) at fault."""
    parsed = Parsed(NAME)
    seen: set[str] = set()
    count = 0
    for member in json_files(source):
        label = source.label(member)
        for index, raw in enumerate(load_json_list(source, member)):
            count += 1
            _conversation(raw, where(label, index, raw), count, parsed, seen)
    return History(parsed)


def _conversation(raw: Any, here: str, number: int, parsed: Parsed, seen: set[str]) -> None:
    """Add conversation ``raw`` (the ``number``-th of the export) to ``parsed``."""
    if not isinstance(raw, dict):
        raise MalformedHistory(f"{here}: not an object")
    messages = raw.get("chat_messages")
    if not isinstance(messages, list):
        raise MalformedHistory(f"{here}: no 'chat_messages' list")
    ident = raw.get("uuid") or f"#{number}"
    name = raw.get("name") if isinstance(raw.get("name"), str) else ""
    conversation = Conversation(key=f"claude:{ident}", title=name or "")
    last = _time(raw.get("created_at"), here)
    for position, message in enumerate(messages, 1):
        at = f"{here}, message {position}"
        if not isinstance(message, dict):
            raise MalformedHistory(f"{at}: not an object")
        sender = message.get("sender")
        if not isinstance(sender, str):
            raise MalformedHistory(f"{at}: no 'sender'")
        when = _time(message.get("created_at"), at) or last
        role = ROLES.get(sender)
        if role is None:
            parsed.skipped[f"{sender} message"] += 1
            continue
        if when is None:
            parsed.skipped["message without a time"] += 1
            continue
        last = when
        uuid = message.get("uuid")
        if not isinstance(uuid, str) or not uuid:
            raise MalformedHistory(f"{at}: no 'uuid'")
        add_message(
            conversation,
            role,
            _text(message, at),
            when,
            f"claude:{uuid}",
            None,
            seen,
            parsed.skipped,
        )
    if conversation.messages:
        parsed.conversations.append(conversation)
    else:
        parsed.skipped["conversation with no text messages"] += 1
