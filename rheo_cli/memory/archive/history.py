"""Other programs' chat history written into the ledger: one transaction, idempotent, original
times. The readers of those programs' files (`rheo_cli.transfer`) hand it over in the neutral
shape defined here (`Parsed`: conversations of `Message`), whatever program it came from.

Conversations go in one after another, oldest first, each in its own order; a conversation
opens a session of its own (it was a new chat in that tool) and within it the session gap
splits sessions as it does for rheo's own turns. A message whose source key the profile
already holds is skipped, and so is one whose content is already stored — the same role,
text, model and time as a turn of the profile (`keys.turn_base`) — whatever ids the file
gives it; so importing the same export again (or a later export holding more, or one whose
ids were changed) adds only what is new. A message that a purge of the profile erased (its
content key is in a tombstone) is left out too, unless asked for. Everything is written in
one transaction: an error leaves the store as it was.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .. import jobs
from ..bulk import TurnIn, import_turns
from ..ledger import sources
from ..store.api import Connection
from ..store.db import write
from ..store.timeutil import to_stored
from .keys import turn_base, turn_bases_at
from .tombstones import purged_keys


@dataclass(frozen=True)
class Message:
    """One message: ``role`` user or assistant, its text, its original time (aware, UTC),
    ``key`` a stable source key unique in that tool (``chatgpt:<message id>``), and for
    replies the model that wrote it when the tool recorded one."""

    role: str
    content: str
    when: datetime
    key: str
    model: str | None = None


@dataclass
class Conversation:
    """One conversation in its own order: ``key`` (``chatgpt:<conversation id>``), title,
    messages (times never go backwards: a message dated before the one it answers is given
    its predecessor's time)."""

    key: str
    title: str
    messages: list[Message] = field(default_factory=list)


@dataclass
class Parsed:
    """What a reader read: the format's name (stored in each imported turn's meta as
    ``imported``), conversations holding at least one message, and how many messages (or
    conversations) it left out, by reason."""

    fmt: str
    conversations: list[Conversation] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)

    @property
    def messages(self) -> int:
        """How many messages the conversations hold."""
        return sum(len(c.messages) for c in self.conversations)


ALREADY = "already imported"
ERASED = "erased by 'rheo purge' (--include-purged brings them back)"


@dataclass
class Summary:
    """What an import did: conversations and turns written, sessions opened, what was
    skipped and why (counts), and extraction/digest jobs queued (with ``--extract``)."""

    fmt: str
    conversations: int = 0
    turns: int = 0
    sessions: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    extract_jobs: int = 0
    digest_jobs: int = 0

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` shape: the counts and ``skipped`` as {reason: count}."""
        return {
            "format": self.fmt,
            "conversations": self.conversations,
            "turns": self.turns,
            "sessions": self.sessions,
            "skipped": dict(sorted(self.skipped.items())),
            "extract_jobs": self.extract_jobs,
            "digest_jobs": self.digest_jobs,
        }


class _Seen:
    """Which messages the profile already holds, by source key or by content, and which a
    purge erased."""

    def __init__(
        self, conn: Connection, profile: str, parsed: Parsed, include_purged: bool
    ) -> None:
        self.profile = profile
        messages = [m for c in parsed.conversations for m in c.messages]
        self.known = sources.known_source_keys(conn, profile, [m.key for m in messages])
        self.stored = turn_bases_at(conn, profile, (to_stored(m.when) for m in messages))
        self.purged = set() if include_purged else purged_keys(conn, profile)

    def why_not(self, message: Message) -> str | None:
        """Why ``message`` is not written (a `Summary.skipped` reason), or None."""
        if message.key in self.known:
            return ALREADY
        base = turn_base({
            "profile": self.profile, "ts": to_stored(message.when), "role": message.role,
            "content": message.content, "model": message.model,
            "status": "ok" if message.role == "assistant" else None,
        })  # fmt: skip
        if self.stored[base] > 0:
            self.stored[base] -= 1  # each stored turn stands for one message
            return ALREADY
        return ERASED if base in self.purged else None


def _rows(parsed: Parsed, seen: _Seen, summary: Summary) -> list[TurnIn]:
    rows: list[TurnIn] = []
    ordered = sorted(parsed.conversations, key=lambda c: c.messages[0].when)
    for conversation in ordered:
        fresh = []
        for message in conversation.messages:
            reason = seen.why_not(message)
            if reason is None:
                fresh.append(message)
            else:
                summary.skipped[reason] += 1
        if not fresh:
            continue
        summary.conversations += 1
        whole = len(fresh) == len(conversation.messages)
        for n, message in enumerate(fresh):
            meta: dict[str, Any] = {"imported": parsed.fmt}
            if n == 0:
                meta["conversation"] = conversation.key
                if conversation.title:
                    meta["title"] = conversation.title
            rows.append(
                TurnIn(
                    role=message.role,
                    content=message.content,
                    when=message.when,
                    model=message.model,
                    status="ok" if message.role == "assistant" else None,
                    meta=meta,
                    source_key=message.key,
                    new_session=whole and n == 0,
                )
            )
    return rows


def import_history(
    conn: Connection,
    profile: str,
    parsed: Parsed,
    *,
    gap_s: float,
    now: str,
    extract: bool = False,
    on_row: Callable[[int], None] | None = None,
    include_purged: bool = False,
) -> Summary:
    """Write ``parsed`` into ``profile``'s ledger in one transaction and return the summary
    (messages already stored, or erased by a purge unless ``include_purged``, are skipped).

    ``gap_s``: the session gap (seconds); ``now``: stored UTC time stamped on queued jobs.
    With ``extract``, an extraction job is queued for every imported reply that answers the
    person, and a digest job for every imported session (ordinary jobs, run by the worker).
    ``on_row(total)`` is called before the first row with the row count (total), then once
    with 0 per row written. Raises InvalidInput (nothing written) for a row the ledger refuses.
    """
    summary = Summary(parsed.fmt, skipped=Counter(parsed.skipped))
    with write(conn):
        rows = _rows(parsed, _Seen(conn, profile, parsed, include_purged), summary)
        if on_row is not None:
            on_row(len(rows))

        def fed() -> Iterator[TurnIn]:
            for row in rows:
                yield row
                if on_row is not None:
                    on_row(0)

        done = import_turns(conn, profile, fed(), gap_s=gap_s)
        summary.turns = done.turns
        summary.sessions = done.sessions
        if extract and done.first_id is not None and done.last_id is not None:
            _queue_jobs(conn, profile, done.first_id, done.last_id, now, summary)
    return summary


def _queue_jobs(
    conn: Connection, profile: str, first: int, last: int, now: str, summary: Summary
) -> None:
    previous: tuple[int, str, int] | None = None
    sessions: list[int] = []
    for turn_id, role, session_id in sources.turn_roles(conn, profile, first, last):
        if session_id not in sessions:
            sessions.append(session_id)
        answers = previous is not None and previous[1] == "user" and previous[2] == session_id
        if role == "assistant" and answers:
            summary.extract_jobs += jobs.enqueue(
                conn, profile=profile, kind="extract", ref_id=turn_id, ts=now
            )
        previous = (turn_id, role, session_id)
    for session_id in sessions:
        summary.digest_jobs += jobs.enqueue(
            conn, profile=profile, kind="digest", ref_id=session_id, ts=now
        )
