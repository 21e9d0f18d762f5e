"""Extraction (Solid# article, extract): after a reply, a small model reads the exchange and the
known facts
and returns 0-3 facts, which go through the memory write path."""

from __future__ import annotations

from datetime import UTC, datetime

from .. import prompts
from ..memory import jobs
from ..memory.facts import items as item_store
from ..memory.facts.parsing import parse_facts
from ..memory.facts.scope import assistant_in
from ..memory.jobs import Job
from ..memory.ledger import turns as ledger
from ..memory.ledger.pairing import reply_to
from ..memory.store import crash
from ..memory.store.db import write
from ..memory.store.errors import NotFound
from ..memory.store.timeutil import from_stored, to_stored
from ..memory.text.render import clip, entry, plural
from ..memory.text.safety import mask
from ..services import Services
from . import extractors, facts, schemas


class ExtractionUnreadable(Exception):
    """The extractor answered, but nothing in its reply could be read as facts (an empty
    reply, prose, JSON of another shape): the job fails visibly and is retried, rather than
    being listed as done with nothing learnt."""


KNOWN_LIMIT = 40
"""At most this many known facts are shown to the extractor (matching ones first)."""
TURN_TOKENS = 1500
"""Each side of the exchange is clipped to about this many tokens for the extractor."""


def exchange_of(rt: Services, job: Job) -> tuple[ledger.Turn, ledger.Turn]:
    """The (person's turn, reply) pair a job refers to (``ref_id`` is the reply).

    The reply names its question (``meta.reply_to``), so two conversations at once are never
    crossed; a reply stored without it pairs with the nearest question before it. Raises
    LookupError when there is no such question (the job is retried, then fails)."""
    reply = ledger.get_turn(rt.conn, job.profile, job.ref_id)
    question = reply_to(reply)
    if question is not None:
        try:
            person = ledger.get_turn(rt.conn, job.profile, question)
        except NotFound:
            missing = f"turn #{reply.id} answers turn #{question}, which is not stored"
            raise LookupError(missing) from None
        if person.role != "user":
            raise LookupError(f"turn #{reply.id} answers turn #{question}, not a question")
        return person, reply
    before = ledger.session_turns(
        rt.conn, job.profile, reply.session_id, limit=4, before_id=reply.id
    )
    nearest = next((t for t in reversed(before) if t.role == "user"), None)
    if nearest is None:
        raise LookupError(f"turn #{reply.id} has no question before it")
    return nearest, reply


def build_prompt(
    rt: Services, person: ledger.Turn, reply: ledger.Turn, now: datetime
) -> tuple[str, dict[int, str]]:
    """The extractor's user message and the known ids it may refer to (id -> topic).

    With a named assistant (the person's turn's ``meta``), the message names it and the known
    facts are those it sees (shared, and its own marked "this assistant only")."""
    assistant = assistant_in(person.meta)
    active = item_store.list_items(
        rt.conn, person.profile, statuses=("active",), assistant=assistant
    )
    matched = {
        i.id
        for i, _ in item_store.search_items(
            rt.conn, person.profile, person.content[:2000], limit=KNOWN_LIMIT, assistant=assistant
        )
    }
    active.sort(key=lambda i: (i.id not in matched, -i.id))
    shown = active[:KNOWN_LIMIT]
    lines = [f"Date of the exchange: {now.strftime('%A %Y-%m-%d %H:%M %z')}"]
    if assistant is not None:
        persona = rt.config.assistants.get(assistant)
        about = f" ({persona.description})" if persona is not None and persona.description else ""
        lines.append(entry("Conversation with the assistant: ", f"{assistant}{about}"))
    lines += ["", "Known facts:"]
    lines += [
        entry(
            f"#{i.id} [{i.category}] {i.topic}: ",
            i.content_text() + (" (this assistant only)" if i.assistant else ""),
        )
        for i in shown
    ] or ["(none)"]
    lines += [
        "",
        "Exchange:",
        # The extraction model never sees a secret the person pasted.
        entry("Person: ", clip(mask(person.content), TURN_TOKENS)),
        entry("Assistant: ", clip(mask(reply.content), TURN_TOKENS)),
    ]
    return "\n".join(lines), {i.id: i.topic for i in shown}


def run(rt: Services, job: Job, worker: str) -> list[str]:
    """Extract facts for one exchange; returns the job's notes (repairs, drops, outcomes).

    Raises AllExtractorsFailed when no extractor answered, ExtractionUnreadable when its
    reply held no readable list of facts (the job is retried later, then fails)."""
    person, reply = exchange_of(rt, job)
    when = from_stored(reply.ts).astimezone(rt.now().tzinfo)
    user_text, known = build_prompt(rt, person, reply, when)
    text, model, errors = extractors.complete(
        extractors.chain_for(rt),
        system=prompts.load("extract"),
        user=user_text,
        tool=schemas.RECORD_FACTS,
    )
    notes = [f"fallback used after: {e}" for e in errors]
    parsed = parse_facts(
        text, known_ids=known, person_text=mask(person.content), tz=when.tzinfo or UTC, now=when
    )
    notes.extend(parsed.notes)
    if parsed.unreadable is not None:
        raise ExtractionUnreadable(f"{model}: the extractor's reply could not be read: "
                                   f"{parsed.unreadable}")  # fmt: skip
    with write(rt.conn):  # the facts and the job's completion commit together
        notes += facts.store(
            rt, parsed.facts, source="extractor", when=when, turn_of={}, default_turn=person
        )
        notes.append(f"{model}: {plural(len(parsed.facts), 'fact')}")
        crash.reach("extract.store")
        jobs.complete(rt.conn, job.id, worker=worker, ts=to_stored(rt.now()), notes=notes)
    return notes
