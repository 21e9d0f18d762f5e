"""Consolidation (``rheo maintain``, and in the background after a session closes): a small
model reviews the profile's facts in batches for duplicates and stale ones, and rheo applies
what it proposes through the rules of any change (`memory.facts.consolidate`).

Every batch is read before anything changes: one empty or malformed reply, and the job fails
with nothing changed (listed by ``rheo jobs list``, reported by ``rheo doctor``, re-queued by
``rheo maintain --retry-failed``); failing the same way three times, it stops being retried.
"""

from __future__ import annotations

from .. import prompts
from ..memory import jobs
from ..memory.facts import consolidate
from ..memory.facts.consolidate import ReplyUnreadable as ConsolidationUnreadable
from ..memory.jobs import Job
from ..memory.store import crash
from ..memory.store.db import write
from ..memory.store.timeutil import to_stored
from ..memory.text.render import plural
from ..services import Services
from . import extractors, schemas

__all__ = ["ConsolidationUnreadable", "run"]


def run(rt: Services, job: Job, worker: str) -> list[str]:
    """Review ``job.profile``'s facts (`consolidate.batches`), then apply every proposal and
    complete the job in one transaction; returns the notes. Raises AllExtractorsFailed when
    no model answered, ConsolidationUnreadable when a reply could not be read (nothing is
    changed either way)."""
    now = rt.now()
    groups = consolidate.batches(rt.conn, job.profile)
    notes: list[str] = []
    proposals: list[consolidate.Proposal] = []
    for batch in groups:
        text, model, errors = extractors.complete(
            extractors.chain_for(rt),
            system=prompts.load("consolidate"),
            user=consolidate.prompt(batch, now),
            max_tokens=1500,
            tool=schemas.RECORD_CONSOLIDATION,
        )
        notes += [f"fallback used after: {e}" for e in errors]
        try:
            found, read_notes = consolidate.read(text, batch)
        except ConsolidationUnreadable as exc:
            raise ConsolidationUnreadable(f"{model}: {exc}") from None
        notes += read_notes
        notes.append(
            f"{model}: {plural(len(batch), 'fact')} reviewed, "
            f"{plural(len(found), 'change')} proposed"
        )
        proposals += found
    with write(rt.conn):  # the changes and the job's completion commit together
        if not groups:
            notes.append("no facts to review together")
        notes += consolidate.apply(rt.conn, job.profile, proposals, now=now, settings=rt.settings)
        crash.reach("consolidate.store")
        jobs.complete(rt.conn, job.id, worker=worker, ts=to_stored(now), notes=notes)
    return notes
