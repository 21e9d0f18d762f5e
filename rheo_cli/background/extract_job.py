"""Extraction (seed 2): after a reply, a small model reads the exchange and the known facts
and returns 0-3 facts, which go through the memory write path."""

from __future__ import annotations

from datetime import datetime

from .. import prompts
from ..memory import jobs
from ..memory.facts import items as item_store
from ..memory.facts.parsing import parse_facts
from ..memory.jobs import Job
from ..memory.ledger import turns as ledger
from ..memory.store import crash
from ..memory.store.db import write
from ..memory.store.timeutil import from_stored, to_stored
from ..memory.text.render import clip, entry
from ..runtime import Runtime
from . import extractors, facts

KNOWN_LIMIT = 40
"""At most this many known facts are shown to the extractor (matching ones first)."""
TURN_TOKENS = 1500
"""Each side of the exchange is clipped to about this many tokens for the extractor."""


def exchange_of(rt: Runtime, job: Job) -> tuple[ledger.Turn, ledger.Turn]:
    """The (person's turn, reply) pair a job refers to (``ref_id`` is the reply): the turn
    the reply names in ``meta.reply_to`` — with several processes asking at once, other turns
    may come between them — else the last question before it."""
    reply = ledger.get_turn(rt.conn, job.profile, job.ref_id)
    asked = reply.meta.get("reply_to") if isinstance(reply.meta, dict) else None
    if isinstance(asked, int):
        person = ledger.get_turn(rt.conn, job.profile, asked)
        if person.role == "user" and person.session_id == reply.session_id:
            return person, reply
    before = ledger.session_turns(
        rt.conn, job.profile, reply.session_id, limit=4, before_id=reply.id
    )
    person = next((t for t in reversed(before) if t.role == "user"), None)
    if person is None:
        raise LookupError(f"turn #{reply.id} has no question before it")
    return person, reply


def build_prompt(
    rt: Runtime, person: ledger.Turn, reply: ledger.Turn, now: datetime
) -> tuple[str, dict[int, str]]:
    """The extractor's user message and the known ids it may refer to (id -> topic)."""
    active = item_store.list_items(rt.conn, person.profile, statuses=("active",))
    matched = {
        i.id
        for i, _ in item_store.search_items(
            rt.conn, person.profile, person.content[:2000], limit=KNOWN_LIMIT
        )
    }
    active.sort(key=lambda i: (i.id not in matched, -i.id))
    shown = active[:KNOWN_LIMIT]
    lines = [f"Date of the exchange: {now.strftime('%A %Y-%m-%d %H:%M %z')}", "", "Known facts:"]
    lines += [entry(f"#{i.id} [{i.category}] {i.topic}: ", i.content_text()) for i in shown] or [
        "(none)"
    ]
    lines += [
        "",
        "Exchange:",
        entry("Person: ", clip(person.content, TURN_TOKENS)),
        entry("Assistant: ", clip(reply.content, TURN_TOKENS)),
    ]
    return "\n".join(lines), {i.id: i.topic for i in shown}


def run(rt: Runtime, job: Job, worker: str) -> list[str]:
    """Extract facts for one exchange; returns the job's notes (repairs, drops, outcomes).

    Raises AllExtractorsFailed when no extractor answered (the job is retried later)."""
    person, reply = exchange_of(rt, job)
    when = from_stored(reply.ts).astimezone(rt.now().tzinfo)
    user_text, known = build_prompt(rt, person, reply, when)
    text, model, errors = extractors.complete(
        extractors.chain_for(rt), system=prompts.load("extract"), user=user_text
    )
    notes = [f"fallback used after: {e}" for e in errors]
    parsed = parse_facts(text, known_ids=known, person_text=person.content, tz=when.tzinfo)
    notes.extend(parsed.notes)
    with write(rt.conn):  # the facts and the job's completion commit together
        notes += facts.store(
            rt, parsed.facts, source="extractor", when=when, turn_of={}, default_turn=person
        )
        notes.append(f"{model}: {len(parsed.facts)} fact(s)")
        crash.reach("extract.store")
        jobs.complete(rt.conn, job.id, worker=worker, ts=to_stored(rt.now()), notes=notes)
    return notes
