"""The ``llm`` command-line tool's ``logs.db`` (Simon Willison's llm): each logged exchange
becomes the person's prompt and the model's response, both at the exchange's time, grouped by
conversation (a thread since llm 0.32); an exchange without one is a conversation of its own.

Reads both schemas llm has written (`llm_logs.read_llm_responses`): the message store of llm
0.32 and later (``threads``, ``turns``, ``messages``, ``parts``) and the legacy ``responses``
table of llm 0.4 to 0.31, which an upgraded logs.db still holds.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..memory.archive.history import Conversation, Parsed
from ..memory.store.errors import InvalidInput
from .history import MalformedHistory, add_message
from .llm_logs import read_llm_responses


def _time(value: Any, here: str) -> datetime:
    if not isinstance(value, str):
        raise MalformedHistory(f"{here}: datetime_utc {value!r} is not a date-time")
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise MalformedHistory(f"{here}: datetime_utc {value!r} is not a date-time") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def parse(path: Path) -> Parsed:
    """Read an llm ``logs.db`` (opened read-only). Keys: ``llm:<response or turn id>:prompt``
    and ``llm:<response or turn id>:response``; conversations ``llm:<conversation or thread
    id>`` (a legacy conversation continued after the upgrade keeps its id as its thread).
    Raises MalformedHistory naming the response at fault, or when the file is not an llm log
    database."""
    try:
        rows = read_llm_responses(path)
    except InvalidInput as exc:
        raise MalformedHistory(str(exc)) from None
    parsed = Parsed("llm")
    by_key: dict[str, Conversation] = {}
    seen: set[str] = set()
    skipped: Counter[str] = parsed.skipped
    for row in rows:
        ident = row["id"]
        here = f"{path}: response {ident!r}"
        if ident is None or str(ident) == "":
            raise MalformedHistory(f"{path}: a response (row {row['row_order']}) has no id")
        when = _time(row["datetime_utc"], here)
        conv_id = row["conversation_id"]
        key = f"llm:{conv_id}" if conv_id else f"llm:{ident}"
        conversation = by_key.get(key)
        if conversation is None:
            conversation = Conversation(key=key, title=row["conversation_name"] or "")
            by_key[key] = conversation
            parsed.conversations.append(conversation)
        for role, field in (("user", "prompt"), ("assistant", "response")):
            text = row[field]
            if text is not None and not isinstance(text, str):
                raise MalformedHistory(f"{here}: {field} is not text")
            add_message(
                conversation,
                role,
                text or "",
                when,
                f"llm:{ident}:{field}",
                row["model"] if role == "assistant" else None,
                seen,
                skipped,
            )
    kept = [c for c in parsed.conversations if c.messages]
    skipped["conversation with no text messages"] += len(parsed.conversations) - len(kept)
    if not skipped["conversation with no text messages"]:
        del skipped["conversation with no text messages"]
    parsed.conversations = kept
    return parsed
