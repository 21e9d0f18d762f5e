"""A Claude.ai data export's ``conversations.json``: a list of conversations (``uuid``,
``name``, ``created_at``) each with its ``chat_messages`` in order: ``uuid``, ``sender``
(``human`` or ``assistant``), ``text`` (or ``content`` blocks of type ``text``), ``created_at``
(ISO 8601), and ``attachments``/``files`` the person added.

An attachment is recorded by its file name only (``[attachment: notes.pdf]``); tool use and
other non-text blocks are left out.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..memory.archive.history import Conversation, Parsed
from ..memory.store.errors import InvalidInput
from ..memory.store.timeutil import parse_instant
from .history import MalformedHistory, add_message, load_json_list, where

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
    for field in ("attachments", "files"):
        for item in message.get(field) or []:
            if isinstance(item, dict) and isinstance(item.get("file_name"), str):
                names.append(item["file_name"])
    if names and text.strip():
        text += "\n\n" + "\n".join(f"[attachment: {n}]" for n in dict.fromkeys(names))
    return text


def parse(path: Path) -> Parsed:
    """Read ``conversations.json`` of a Claude.ai export. Keys: ``claude:<uuid>`` of the
    conversation and of each message. Raises MalformedHistory naming the conversation (and
    message number) at fault."""
    parsed = Parsed("claude")
    seen: set[str] = set()
    for index, raw in enumerate(load_json_list(path)):
        here = where(path, index, raw)
        if not isinstance(raw, dict):
            raise MalformedHistory(f"{here}: not an object")
        messages = raw.get("chat_messages")
        if not isinstance(messages, list):
            raise MalformedHistory(f"{here}: no 'chat_messages' list")
        ident = raw.get("uuid") or f"#{index + 1}"
        name = raw.get("name") if isinstance(raw.get("name"), str) else ""
        conversation = Conversation(key=f"claude:{ident}", title=name or "")
        last = _time(raw.get("created_at"), here)
        for number, message in enumerate(messages, 1):
            at = f"{here}, message {number}"
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
    return parsed
