"""A ChatGPT data export (Settings → Data controls → Export data): its conversations, each a
tree of message nodes (``mapping``: node id -> {message, parent, children}) whose branch shown
last is the path from ``current_node`` up to the root. Messages carry ``author.role``,
``content.parts`` and ``create_time`` (Unix seconds, sometimes null).

Two layouts, both read, given as the zip archive, its unpacked folder, or one file:

- ``conversations.json``, one JSON array of every conversation (exports before 2026);
- ``conversations-000.json``, ``conversations-001.json``, ... (2026): the same array cut in
  parts numbered from 0, beside ``export_manifest.json`` (an inventory of the export's files).
  A folder or an archive is read part after part in number order; a manifest naming a part
  that is not there stops the import (the export is incomplete) before anything is written.
  One part given alone is read alone, with a note saying how to import them all.

Only the shown branch is imported (edited or regenerated alternatives are left out), and only
text said by the person or the assistant: system and tool messages, hidden messages, and
non-text content (code runs, browsing, images, reasoning) are counted as skipped. A title that
is null, a missing ``current_node``, ``create_time``, ``metadata``, message id (the node's id
stands in) or content (counted as skipped) are all read; a conversation without ``mapping`` is
malformed.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from ..memory.archive.history import Conversation, Parsed
from .history import (
    SHARD,
    History,
    MalformedHistory,
    add_message,
    conversation_files,
    first_keys,
    json_files,
    load_json_list,
    part_number,
    where,
)
from .source import Source, Unreadable

NAME = "chatgpt"
MANIFEST = "export_manifest.json"
TEXT_TYPES = ("text", "multimodal_text")


def _path(mapping: dict[str, Any], current: Any, here: str) -> list[tuple[str, dict[str, Any]]]:
    """``(node id, node)`` from the root to ``current`` (or, without one, along the last
    children)."""
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
            path.append((at, mapping[at]))
            at = mapping[at].get("parent")
        return path[::-1]
    roots = [k for k, n in mapping.items() if n.get("parent") not in mapping]
    if not roots:
        return []
    path = [(roots[0], mapping[roots[0]])]
    walked = {roots[0]}
    while True:
        children = path[-1][1].get("children") or []
        if not isinstance(children, list):
            raise MalformedHistory(f"{here}: 'children' is not a list")
        nxt = next((c for c in reversed(children) if isinstance(c, str) and c in mapping), None)
        if nxt is None or nxt in walked:
            return path
        walked.add(nxt)
        path.append((nxt, mapping[nxt]))


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
    if content is None:
        skipped["message without content"] += 1
        return None
    if not isinstance(content, dict):
        raise MalformedHistory(f"{here}: message content is not an object")
    kind = content.get("content_type", "text")
    if kind not in TEXT_TYPES:
        skipped[f"{kind} content"] += 1
        return None
    parts = content.get("parts") or []
    if not isinstance(parts, list):
        raise MalformedHistory(f"{here}: content.parts is not a list")
    texts = [p for p in parts if isinstance(p, str)]
    if len(texts) < len(parts):
        skipped["image or file part"] += len(parts) - len(texts)
    return "\n".join(texts)


def detect(source: Source) -> float:
    """How surely ``source`` is a ChatGPT export (0 to 1), by content: a JSON array whose first
    conversation has ``mapping`` (a file, or the conversation files of a folder or an
    archive) is one; a folder or an archive with ``export_manifest.json`` and no conversation
    rheo could tell apart is most likely one."""
    keys = first_keys(source)
    if keys is not None:
        return 1.0 if "mapping" in keys else 0.0
    if source.kind in ("folder", "zip") and any(
        m.rpartition("/")[2] == MANIFEST for m in source.members()
    ):
        return 0.8
    return 0.0


def read(source: Source) -> History:
    """Read a ChatGPT export: a zip archive or folder (every part, in order) or one JSON file.
    Keys: ``chatgpt:<conversation id>`` and ``chatgpt:<message id>``. Raises MalformedHistory
    naming the file and conversation at fault, or the parts a manifest lists that are
    missing; Unreadable when a file cannot be read."""
    files = json_files(source)
    _check_manifest(source, [f for f in files if f is not None])
    parsed = Parsed(NAME)
    seen: set[str] = set()
    count = 0
    for member in files:
        label = source.label(member)
        for index, raw in enumerate(load_json_list(source, member)):
            count += 1
            _conversation(raw, where(label, index, raw), count, parsed, seen)
    return History(parsed, _part_notes(source))


def _conversation(raw: Any, here: str, number: int, parsed: Parsed, seen: set[str]) -> None:
    """Add conversation ``raw`` (the ``number``-th of the export) to ``parsed``."""
    if not isinstance(raw, dict):
        raise MalformedHistory(f"{here}: not an object")
    mapping = raw.get("mapping")
    if not isinstance(mapping, dict):
        raise MalformedHistory(f"{here}: no 'mapping' of message nodes")
    ident = raw.get("conversation_id") or raw.get("id") or f"#{number}"
    title = raw.get("title") if isinstance(raw.get("title"), str) else ""
    conversation = Conversation(key=f"chatgpt:{ident}", title=title or "")
    last = _time(raw.get("create_time"), here)
    for node_id, node in _path(mapping, raw.get("current_node"), here):
        message = node.get("message")
        if message is None:
            continue
        if not isinstance(message, dict):
            raise MalformedHistory(f"{here}: node {node_id!r} has a bad message")
        author = message.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        if not isinstance(role, str):
            parsed.skipped["message without an author role"] += 1
            continue
        when = _time(message.get("create_time"), here) or last
        if role not in ("user", "assistant"):
            parsed.skipped[f"{role} message"] += 1
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
        ident_m = message.get("id") or node.get("id") or node_id
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


def _check_manifest(source: Source, parts: list[str]) -> None:
    """Raise MalformedHistory when the ``export_manifest.json`` beside ``parts`` names a
    ``conversations-NNN.json`` that is not there (an export cut short). The manifest's own
    layout is not relied on: every string in it that names a part counts. A manifest that is
    missing or cannot be read checks nothing."""
    if not parts:
        return
    folder = parts[0].rpartition("/")[0]
    manifest = f"{folder}/{MANIFEST}" if folder else MANIFEST
    if manifest not in source.members():
        return
    try:
        with source.open_member(manifest) as handle:
            listed = {name for name in _strings(json.load(handle)) if part_number(name) is not None}
    except (Unreadable, ValueError, RecursionError):
        return
    present = {p.rpartition("/")[2] for p in parts}
    missing = sorted({n.rpartition("/")[2] for n in listed} - present)
    if missing:
        raise MalformedHistory(
            f"{source.label(manifest)} lists {', '.join(missing)}, missing from "
            f"{source.label()}: the export is incomplete (download it again); nothing was "
            "imported"
        )


def _strings(value: Any) -> list[str]:
    """Every string in a JSON value (keys included), depth first."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _part_notes(source: Source) -> list[str]:
    """A note when ``source`` is one ``conversations-NNN.json`` of a folder holding others."""
    if source.kind != "file" or source.path is None or not SHARD.fullmatch(source.path.name):
        return []
    folder = source.path.parent
    with Source.open(folder) as siblings:
        parts = [m for m in conversation_files(siblings) if "/" not in m]
    if len(parts) < 2:
        return []
    return [
        f"{source.path.name} is one of the {len(parts)} parts of a ChatGPT export "
        f"({parts[0]} to {parts[-1]}); to import them all, give the folder: rheo import "
        f"{folder}"
    ]
