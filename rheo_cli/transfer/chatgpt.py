"""A ChatGPT data export's ``conversations.json``: a list of conversations, each a tree of
message nodes (``mapping``: node id -> {message, parent, children}) whose branch shown last is
the path from ``current_node`` up to the root. Messages carry ``author.role``,
``content.parts`` and ``create_time`` (Unix seconds, sometimes null).

Only the shown branch is imported (edited or regenerated alternatives are left out), and only
text said by the person or the assistant: system and tool messages, hidden messages, and
non-text content (code runs, browsing, images) are counted as skipped.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..memory.archive.history import Conversation, Parsed
from .history import MalformedHistory, add_message, load_json_list, where

TEXT_TYPES = ("text", "multimodal_text")


def _path(mapping: dict[str, Any], current: Any, here: str) -> list[dict[str, Any]]:
    """The nodes from the root to ``current`` (or, without one, along the last children)."""
    for node_id, node in mapping.items():
        if not isinstance(node, dict):
            raise MalformedHistory(f"{here}: node {node_id!r} is not an object")
    if isinstance(current, str) and current in mapping:
        path = []
        visited: set[str] = set()
        at: Any = current
        while isinstance(at, str) and at in mapping:
            if at in visited:
                raise MalformedHistory(f"{here}: the message tree loops at node {at!r}")
            visited.add(at)
            path.append(mapping[at])
            at = mapping[at].get("parent")
        return path[::-1]
    roots = [n for n in mapping.values() if n.get("parent") not in mapping]
    if not roots:
        return []
    path = [roots[0]]
    walked = {id(roots[0])}
    while True:
        children = path[-1].get("children") or []
        if not isinstance(children, list):
            raise MalformedHistory(f"{here}: 'children' is not a list")
        nxt = next((mapping[c] for c in reversed(children) if c in mapping), None)
        if nxt is None or id(nxt) in walked:
            return path
        walked.add(id(nxt))
        path.append(nxt)


def _time(value: Any, here: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MalformedHistory(f"{here}: create_time {value!r} is not a number of seconds")
    try:
        return datetime.fromtimestamp(float(value), UTC)
    except (OverflowError, OSError, ValueError):
        raise MalformedHistory(f"{here}: create_time {value!r} is out of range") from None


def _text(message: dict[str, Any], here: str, skipped: Counter[str]) -> str | None:
    content = message.get("content")
    if not isinstance(content, dict):
        raise MalformedHistory(f"{here}: message content is not an object")
    kind = content.get("content_type", "text")
    if kind not in TEXT_TYPES:
        skipped[f"{kind} content"] += 1
        return None
    parts = content.get("parts", [])
    if not isinstance(parts, list):
        raise MalformedHistory(f"{here}: content.parts is not a list")
    texts = [p for p in parts if isinstance(p, str)]
    if len(texts) < len(parts):
        skipped["image or file part"] += len(parts) - len(texts)
    return "\n".join(texts)


def parse(path: Path) -> Parsed:
    """Read ``conversations.json`` of a ChatGPT export. Keys: ``chatgpt:<conversation id>`` and
    ``chatgpt:<message id>``. Raises MalformedHistory naming the conversation at fault."""
    parsed = Parsed("chatgpt")
    seen: set[str] = set()
    for index, raw in enumerate(load_json_list(path)):
        here = where(path, index, raw)
        if not isinstance(raw, dict):
            raise MalformedHistory(f"{here}: not an object")
        mapping = raw.get("mapping")
        if not isinstance(mapping, dict):
            raise MalformedHistory(f"{here}: no 'mapping' of message nodes")
        ident = raw.get("conversation_id") or raw.get("id") or f"#{index + 1}"
        title = raw.get("title") if isinstance(raw.get("title"), str) else ""
        conversation = Conversation(key=f"chatgpt:{ident}", title=title or "")
        last = _time(raw.get("create_time"), here)
        for node in _path(mapping, raw.get("current_node"), here):
            message = node.get("message")
            if message is None:
                continue
            if not isinstance(message, dict):
                raise MalformedHistory(f"{here}: node {node.get('id')!r} has a bad message")
            author = message.get("author")
            role = author.get("role") if isinstance(author, dict) else None
            if not isinstance(role, str):
                raise MalformedHistory(f"{here}: message {message.get('id')!r} has no author role")
            when = _time(message.get("create_time"), here) or last
            if role not in ("user", "assistant"):
                skipped_reason = f"{role} message"
                parsed.skipped[skipped_reason] += 1
                continue
            raw_meta = message.get("metadata")
            meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
            if meta.get("is_visually_hidden_from_conversation"):
                parsed.skipped["hidden message"] += 1
                continue
            text = _text(message, here, parsed.skipped)
            if text is None:
                continue
            if when is None:
                parsed.skipped["message without a time"] += 1
                continue
            last = when
            ident_m = message.get("id") or node.get("id")
            if not isinstance(ident_m, str) or not ident_m:
                raise MalformedHistory(f"{here}: a message has no id")
            slug = meta.get("model_slug")
            add_message(
                conversation,
                role,
                text,
                when,
                f"chatgpt:{ident_m}",
                slug if isinstance(slug, str) and role == "assistant" else None,
                seen,
                parsed.skipped,
            )
        if conversation.messages:
            parsed.conversations.append(conversation)
        else:
            parsed.skipped["conversation with no text messages"] += 1
    return parsed
