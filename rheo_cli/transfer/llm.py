"""The ``llm`` command-line tool's ``logs.db`` (Simon Willison's llm; ``llm logs path`` prints
where it is): each logged exchange becomes the person's prompt and the model's response, both
at the exchange's time, grouped by conversation (a thread since llm 0.32); an exchange without
one is a conversation of its own. Recognised by content: an SQLite file with llm's tables,
whatever it is called.

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
from .history import History, MalformedHistory, add_message
from .llm_logs import is_llm_log, read_llm_responses, tables
from .source import SQLITE_MAGIC, Source

NAME = "llm"


def _time(value: Any, here: str) -> datetime:
    if not isinstance(value, str):
        raise MalformedHistory(f"{here}: datetime_utc {value!r} is not a date-time")
    try:
        moment = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise MalformedHistory(f"{here}: datetime_utc {value!r} is not a date-time") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def detect(source: Source) -> float:
    """How surely ``source`` is llm's logs.db (0 to 1): an SQLite file with llm's tables."""
    if source.kind != "file" or source.path is None or not source.head.startswith(SQLITE_MAGIC):
        return 0.0
    schema = tables(source.path)
    return 1.0 if schema is not None and is_llm_log(schema) else 0.0


def read(source: Source) -> History:
    """`parse` of a file source. Raises MalformedHistory for a folder, an archive or stdin
    (logs.db is one file)."""
    if source.kind != "file" or source.path is None:
        raise MalformedHistory(
            f"{source.label()} is not a file: llm's logs.db is one SQLite file "
            "('llm logs path' prints where it is)"
        )
    return History(parse(source.path))


def parse(path: Path) -> Parsed:
    """Read an llm ``logs.db`` (opened read-only). Keys: ``llm:<response or turn id>:prompt``
    and ``llm:<response or turn id>:response``; conversations ``llm:<conversation or thread
    id>`` (a legacy conversation continued after the upgrade keeps its id as its thread).
    Raises MalformedHistory naming the response at fault, or when the file is not an llm log
    database."""
    rows = read_llm_responses(path)
    parsed = Parsed(NAME)
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
