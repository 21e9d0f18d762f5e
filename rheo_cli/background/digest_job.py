"""Session digests (Rheo article §04, layer 1): when a session closes, a model summarises its turns
(no tools) into a narrative, candidate facts, procedures and decisions."""

from __future__ import annotations

import contextlib
from datetime import UTC

from .. import prompts
from ..memory import jobs
from ..memory.context import withheld
from ..memory.facts import consolidate
from ..memory.facts.parsing import Parsed, parse_facts
from ..memory.facts.scope import assistant_in
from ..memory.jobs import Job
from ..memory.ledger import sessions
from ..memory.ledger import turns as ledger
from ..memory.ledger.digests import store_digest
from ..memory.ledger.pairing import in_reply_order
from ..memory.store import crash
from ..memory.store.db import write
from ..memory.store.errors import EngineError
from ..memory.store.timeutil import display, from_stored, to_stored
from ..memory.text.render import clip, entry, plural
from ..memory.text.safety import mask
from ..services import Services
from . import extractors, facts, schemas

TURN_TOKENS = 600
"""Each turn is clipped to about this many tokens in the transcript sent for a digest."""
MAX_TURNS = 120
"""Sessions longer than this send their first and last turns (half each)."""
DIGEST_FACTS = 5


class DigestUnusable(Exception):
    """The model's reply had no narrative; the job is retried."""


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [" ".join(value.split())] if value.strip() else []
    if not isinstance(value, list):
        return []
    return [
        " ".join(str(v).split())
        for v in value
        if isinstance(v, str | int | float) and str(v).strip()
    ]


def _speaker(turn: ledger.Turn) -> str:
    """``person``, ``assistant`` or, with a named assistant, ``assistant (sarah)``."""
    if turn.role == "user":
        return "person"
    name = assistant_in(turn.meta)
    return f"assistant ({name})" if name else "assistant"


def run(rt: Services, job: Job, worker: str) -> list[str]:
    """Write the digest of session ``job.ref_id``; returns notes. Raises AllExtractorsFailed
    or DigestUnusable (retried later)."""
    session = sessions.get_session(rt.conn, job.profile, job.ref_id)
    turns = [t for t in ledger.session_turns(rt.conn, job.profile, session.id) if t.content]
    # What the person asked rheo to forget is not summarised again.
    held = withheld.load(rt.conn, job.profile)
    turns = [t for t in turns if held.keeps(t)]
    # Two conversations at once interleave in the ledger: each reply after its question.
    turns = in_reply_order(turns)
    if not turns:
        notes = ["session has no text; no digest"]
        jobs.complete(rt.conn, job.id, worker=worker, ts=to_stored(rt.now()), notes=notes)
        return notes
    shown = (
        turns if len(turns) <= MAX_TURNS else (turns[: MAX_TURNS // 2] + turns[-MAX_TURNS // 2 :])
    )
    tz = rt.now().tzinfo
    lines = [
        f"Session from {display(session.started_at, tz)} to {display(session.last_turn_at, tz)}",
        "",
    ]
    for t in shown:
        lines.append(
            f"#{t.id} [{display(t.ts, tz)}] "
            + entry(f"{_speaker(t)}: ", clip(mask(t.content), TURN_TOKENS))
        )
    text, model, errors = extractors.complete(
        extractors.chain_for(rt),
        system=prompts.load("digest"),
        user="\n".join(lines),
        max_tokens=2000,
        tool=schemas.RECORD_DIGEST,
    )
    notes = [f"fallback used after: {e}" for e in errors]
    person_text = " ".join(mask(t.content)[:500] for t in turns if t.role == "user")[:4000]
    ids = {t.id for t in turns}
    said = from_stored(session.last_turn_at).astimezone(tz)  # "friday" as of the session
    parsed = parse_facts(
        text, turn_ids=ids, person_text=person_text, limit=DIGEST_FACTS, tz=tz or UTC, now=said
    )
    notes.extend(parsed.notes)
    narrative = " ".join(str(parsed.data.get("narrative") or "").split())
    if not narrative:
        raise DigestUnusable("the digest reply had no narrative")
    with write(rt.conn):  # the digest, its facts and the job's completion commit together
        notes += _store(rt, job, worker, session, turns, parsed, narrative, model)
    # A closed session is when the background reviews the profile's facts (when enough
    # changed): a consolidation job the same worker runs next.
    with contextlib.suppress(EngineError):
        consolidate.enqueue(
            rt.conn, job.profile, to_stored(rt.now()), min_new=consolidate.BACKGROUND_NEW
        )
    return notes


def _store(
    rt: Services,
    job: Job,
    worker: str,
    session: sessions.Session,
    turns: list[ledger.Turn],
    parsed: Parsed,
    narrative: str,
    model: str,
) -> list[str]:
    notes: list[str] = []
    ids = {t.id for t in turns}
    digest = store_digest(
        rt.conn,
        profile=job.profile,
        session_id=session.id,
        narrative=narrative,
        facts=[
            {
                "category": c.fact.category,
                "topic": c.fact.topic,
                "label": c.fact.label,
                "properties": c.fact.properties,
                "turn_id": c.turn_id,
            }
            for c in parsed.facts
        ],
        procedures=_strings(parsed.data.get("procedures")),
        decisions=_strings(parsed.data.get("decisions")),
        source_turn_ids=sorted(ids),
        model=model,
        created_at=to_stored(rt.now()),
    )
    last_user = next((t for t in reversed(turns) if t.role == "user"), turns[-1])
    by_id = {t.id: t for t in turns}
    when = from_stored(session.last_turn_at)
    notes += facts.store(
        rt, parsed.facts, source="digest", when=when, turn_of=by_id, default_turn=last_user
    )
    notes.append(f"{model}: digest #{digest.id}, {plural(len(parsed.facts), 'fact')}")
    crash.reach("digest.store")
    jobs.complete(rt.conn, job.id, worker=worker, ts=to_stored(rt.now()), notes=notes)
    return notes
