"""What every reader of another program's chat history shares: its error, and the helpers that
build the neutral shape the engine imports (`rheo_cli.memory.archive.history`: `Parsed`
conversations of `Message`), whatever program the history came from."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..memory.archive.history import Conversation, Message


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


def load_json_list(path: Path) -> list[Any]:
    """The JSON array in ``path``. Raises MalformedHistory naming the line and column of a
    syntax error, or saying what the top level is instead of a list."""
    try:
        with path.open("rb") as handle:
            data = json.load(handle)
    except json.JSONDecodeError as exc:
        raise MalformedHistory(
            f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except UnicodeDecodeError as exc:
        raise MalformedHistory(f"{path}: not UTF-8 text ({exc.reason})") from None
    except RecursionError:
        raise MalformedHistory(f"{path}: JSON nested too deeply") from None
    if not isinstance(data, list):
        raise MalformedHistory(
            f"{path}: expected a JSON list of conversations, found {type(data).__name__}"
        )
    return data


def where(path: Path, index: int, conversation: Any) -> str:
    """``FILE: conversation N ("title")`` for error messages (N counts from 1)."""
    title = ""
    if isinstance(conversation, dict):
        for name in ("title", "name", "id", "uuid"):
            value = conversation.get(name)
            if isinstance(value, str) and value.strip():
                title = f" ({' '.join(value.split())[:60]!r})"
                break
    return f"{path}: conversation {index + 1}{title}"
