"""The ``llm`` command-line tool's ``logs.db`` (Simon Willison's llm): one row per exchange
in its ``responses`` table (``prompt``, ``response``, ``model``, ``datetime_utc``,
``conversation_id``), conversations named in ``conversations``. Each row becomes the person's
prompt and the model's response, both at the row's time; rows without a conversation are
conversations of their own.

Reads the legacy ``responses`` table that llm has written since 0.4 (llm 0.32 keeps it and
adds a message store, which this reader does not look at).
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..memory.store.errors import InvalidInput
from ..memory.store.foreign import read_llm_responses
from .model import Conversation, MalformedHistory, Parsed, add_message


def _time(value: Any, here: str) -> datetime:
    if not isinstance(value, str):
        raise MalformedHistory(f"{here}: datetime_utc {value!r} is not a date-time")
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise MalformedHistory(f"{here}: datetime_utc {value!r} is not a date-time") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def parse(path: Path) -> Parsed:
    """Read an llm ``logs.db`` (opened read-only). Keys: ``llm:<response id>:prompt`` and
    ``llm:<response id>:response``. Raises MalformedHistory naming the response at fault, or
    when the file is not an llm log database."""
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
