"""RELEVANT HISTORY: past turns and digests found for the current message, with no model call.

Retrieval is plain engineering (Solid# article): FTS5 bm25 over the ledger (porter stemming, stop
words
dropped), with boosts for names and numbers, for phrases, for turns a stored fact was learnt
from, and for dates a time expression in the message points at ("last month", "in March");
a trigram index covers text without spaces (Chinese, Japanese). Every hit brings its
neighbouring turns for context; session digests that match are candidates too. Lines already
in other sections are left out; every line is dated and names its turn.

Candidates are chosen among the profile's own turns inside the word index (the store scopes
every search there) and weighed by the profile's own word statistics, so another profile's volume
changes nothing. They are read best first until their lines would fill the budget, so a
large budget is spent on the next most relevant lines rather than left unused. A line whose
fact was later superseded says so, with the newer value (`supersede`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, tzinfo

from ..ledger import digests as digest_store
from ..ledger import turns as ledger
from ..store.api import Connection, Row
from ..store.timeutil import display, from_stored, to_stored
from ..text.render import clip, entry, snippet
from ..text.tokens import estimate
from . import supersede
from .lines import Line
from .query import Query, analyse
from .relevance import Scorer

CANDIDATES = 40
"""Turns taken from the word index before re-ranking, at least."""
CHUNK = 20
"""Candidate turns are read this many at a time, best first, until the budget is filled."""
FILL = 1.0
"""Candidates are read until their lines would fill this share of the budget."""
LINE_FLOOR = 12
"""Tokens a history line costs at least (its dated prefix and line break)."""
COMMON_DF = 2000
"""A word in more turns than this is common: it does not choose candidates (reading its
postings would cost time that grows with the ledger)."""
MAX_QUERY_WORDS = 12
ITEM_HITS = 20
"""Memory items searched for the turns they were learnt from."""
NEIGHBOUR_OF = 1000
"""How many of the best hits bring their neighbouring turns (in effect all of them: the
answer to a question is usually the next turn, and LoCoMo says neighbours count)."""
NEIGHBOUR_FACTOR = 0.7
"""A neighbour's score, as a share of its hit's."""
ITEM_WEIGHT = 1.0
"""Score added to a turn a matching stored fact was learnt from (times that fact's match)."""
TIME_WEIGHT = 0.8
"""Score added to a turn inside the time range the message names."""
SPEAKER_WEIGHT = 0.3
"""Score added to a matching turn of the speaker the message asks about (`Query.speaker`:
the person's own turns for "what do I…", "when did I…"; the assistant's for "what did you
suggest?")."""
LINE_SHARE = 0.04
"""A history line is cut to this share of the budget (at least `LINE_MIN` tokens), keeping
the sentences that match the message."""
LINE_MIN = 30
DIGEST_HITS = 10
"""Matching session digests read as candidates."""
DIGEST_SHARE = 0.2
"""A digest line is cut to this share of the budget (at least 60 tokens)."""
DIGEST_SESSION_WEIGHT = 0.6
"""Score added to turns of a session whose digest matches the message (times the digest's
normalised bm25)."""


@dataclass
class _Hit:
    turn_id: int
    session_id: int
    role: str
    content: str
    ts: str
    status: str | None
    bm25: float = 0.0
    item: float = 0.0
    neighbour_of: int | None = None
    score: float = 0.0
    why: list[str] = field(default_factory=list)


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _match_terms(q: Query) -> list[str]:
    return [_quote(t) for t in q.terms] + [_quote(p) for p in q.phrases[:4]]


_TURN_COLS = "t.id, t.session_id, t.role, t.content, t.ts, t.status"


def _rows_to_hits(rows: list[Row], hits: dict[int, _Hit], *, scored: bool) -> None:
    best = max((-r["rank"] for r in rows), default=0.0) if scored else 0.0
    for r in rows:
        hit = hits.get(r["id"])
        if hit is None:
            hit = _Hit(r["id"], r["session_id"], r["role"], r["content"], r["ts"], r["status"])
            hits[r["id"]] = hit
        if scored and best > 0:
            hit.bm25 = max(hit.bm25, (-r["rank"]) / best)


def line_cap(budget: int) -> int:
    """The most history lines a ``budget``-token context could hold (each costs at least
    `LINE_FLOOR` tokens): a bound on lines rendered, never one that leaves budget unused."""
    return max(CANDIDATES, budget // LINE_FLOOR)


def _word_hits(
    conn: Connection, profile: str, q: Query, hits: dict[int, _Hit], budget: int
) -> dict[str, float]:
    """Candidate turns of ``profile`` from the word index, in time bounded by the rare words
    of the query, as many as the budget can use.

    Every read is scoped to the profile inside the index (`api.Store.term_turn_ids`), and word
    statistics are the profile's own, so other profiles change nothing here. Each query word's
    postings are read up to `COMMON_DF` rowids: a word found more often is common (it still counts
    when candidates are scored, but doesn't choose them). Turns are ranked by the summed inverse
    document frequency of the rare words they hold (a bm25-like score without reading every match of
    a common word) and read in that order, `CHUNK` at a time, until their lines would fill the
    budget (at least `CANDIDATES` of them) or none remain. When every word is common, the newest
    turns holding any of them are the candidates, read the same way. Returns each query word's
    inverse document frequency over the profile's ledger.
    """
    words = [(t, _quote(t)) for t in q.terms[:MAX_QUERY_WORDS]]
    words += [(p, _quote(p)) for p in q.phrases[:2]]
    idfs: dict[str, float] = {}
    if not words:
        return idfs
    total = ledger.profile_size(conn, profile) or 1
    scores: dict[int, float] = {}
    common: list[str] = []
    for term, word in words:
        rowids = ledger.term_frequency(conn, profile, word, COMMON_DF + 1)
        df = max(len(rowids), total // 20) if len(rowids) > COMMON_DF else len(rowids)
        idf = math.log((total + 1) / (df + 0.5))
        idfs[term] = idf
        if len(rowids) > COMMON_DF:
            common.append(word)
            continue
        for rowid in rowids:
            scores[rowid] = scores.get(rowid, 0.0) + idf
    if scores:
        order = sorted(scores.items(), key=lambda kv: (-kv[1], -kv[0]))
        top = order[0][1] or 1.0
        ranked = [(rowid, value / top) for rowid, value in order]
    elif common:
        newest = ledger.newest_matching(conn, profile, common, line_cap(budget))
        ranked = [(rowid, 0.5) for rowid in newest]
    else:
        return idfs
    per_line = max(LINE_MIN, int(budget * LINE_SHARE))
    filled = 0
    for start in range(0, len(ranked), CHUNK):
        chunk = dict(ranked[start : start + CHUNK])
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT {_TURN_COLS} FROM turns t WHERE t.id IN ({marks}) AND t.profile = ?",
            (*chunk, profile),
        ).fetchall()
        for r in rows:
            hit = hits.get(r["id"])
            if hit is None:
                hit = _Hit(r["id"], r["session_id"], r["role"], r["content"], r["ts"], r["status"])
                hits[r["id"]] = hit
            hit.bm25 = max(hit.bm25, chunk[r["id"]])
            filled += min(per_line, estimate(r["content"])) + LINE_FLOOR
        if start + CHUNK >= CANDIDATES and filled >= budget * FILL:
            break
    return idfs


def _trigram_hits(conn: Connection, profile: str, q: Query, hits: dict[int, _Hit]) -> None:
    grams: list[str] = []
    short: list[str] = []
    for run in q.runs:
        if len(run) < 3:
            short.append(run)
            continue
        for i in range(len(run) - 2):
            gram = run[i : i + 3]
            if gram not in grams:
                grams.append(gram)
    if grams:
        rows = conn.store.trigram_turns(profile, _TURN_COLS, grams[:40], CANDIDATES)
        _rows_to_hits(rows, hits, scored=True)
    for run in short:
        # Too short for trigrams: a bounded scan of the most recent turns.
        rows = conn.execute(
            f"SELECT {_TURN_COLS}, -1.0 AS rank FROM (SELECT * FROM turns WHERE profile = ? "
            "ORDER BY id DESC LIMIT 20000) t WHERE t.content LIKE ? ESCAPE '\\' LIMIT 50",
            (profile, "%" + run.replace("%", "\\%").replace("_", "\\_") + "%"),
        ).fetchall()
        _rows_to_hits(rows, hits, scored=True)


def _item_hits(conn: Connection, profile: str, q: Query, hits: dict[int, _Hit]) -> None:
    """Turns that stored facts matching the message were learnt from (any item status but
    retracted: an evicted fact still says what its turn was about)."""
    terms = _match_terms(q)
    if not terms:
        return
    rows = conn.store.item_source_turns(profile, terms, ITEM_HITS)
    if not rows:
        return
    best = max(-r["rank"] for r in rows) or 1.0
    scores: dict[int, float] = {}
    for r in rows:
        scores[r["tid"]] = max(scores.get(r["tid"], 0.0), (-r["rank"]) / best)
    missing = [tid for tid in scores if tid not in hits]
    if missing:
        marks = ",".join("?" * len(missing))
        extra = conn.execute(
            f"SELECT {_TURN_COLS} FROM turns t WHERE t.id IN ({marks}) AND t.profile = ?",
            (*missing, profile),
        ).fetchall()
        _rows_to_hits(extra, hits, scored=False)
    for tid, score in scores.items():
        if tid in hits:
            hits[tid].item = max(hits[tid].item, score)


def _time_hits(conn: Connection, profile: str, q: Query, hits: dict[int, _Hit]) -> None:
    """For a message with a time expression ("what did we talk about last week?", "what did
    I buy yesterday?"): the person's turns in that range, unless the words of the message
    already found turns there."""
    if not q.times:
        return
    if q.terms and any(
        span.start <= from_stored(hit.ts) < span.end for hit in hits.values() for span in q.times
    ):
        return
    for span in q.times:
        rows = conn.execute(
            f"SELECT {_TURN_COLS} FROM turns t WHERE t.profile = ? AND t.ts >= ? AND t.ts < ? "
            "AND t.role = 'user' ORDER BY t.ts LIMIT 60",
            (profile, to_stored(span.start), to_stored(span.end)),
        ).fetchall()
        _rows_to_hits(rows, hits, scored=False)


def _neighbours(conn: Connection, profile: str, hits: dict[int, _Hit]) -> None:
    best = sorted(hits.values(), key=lambda h: -h.score)[:NEIGHBOUR_OF]
    wanted: dict[int, _Hit] = {}
    for hit in best:
        for other in (hit.turn_id - 1, hit.turn_id + 1):
            if other not in hits and other not in wanted:
                wanted[other] = hit
    if not wanted:
        return
    marks = ",".join("?" * len(wanted))
    rows = conn.execute(
        f"SELECT {_TURN_COLS} FROM turns t WHERE t.id IN ({marks}) AND t.profile = ?",
        (*wanted, profile),
    ).fetchall()
    for r in rows:
        source = wanted[r["id"]]
        if r["session_id"] != source.session_id:
            continue
        hit = _Hit(r["id"], r["session_id"], r["role"], r["content"], r["ts"], r["status"])
        hit.neighbour_of = source.turn_id
        hit.score = source.score * NEIGHBOUR_FACTOR
        hit.why = [f"next to #{source.turn_id}"]
        hits[r["id"]] = hit


def _score(hit: _Hit, q: Query, scorer: Scorer) -> None:
    value, matched, phrases = scorer.score(hit.content, hit.bm25)
    in_time = False
    if q.times:
        moment = from_stored(hit.ts)
        in_time = any(span.start <= moment < span.end for span in q.times)
    own = q.speaker is not None and hit.role == q.speaker and bool(matched or hit.item)
    hit.score = (
        value
        + ITEM_WEIGHT * hit.item
        + (TIME_WEIGHT if in_time else 0.0)
        + (SPEAKER_WEIGHT if own else 0.0)
    )
    why = []
    if matched:
        why.append("matched: " + ", ".join(matched[:6]))
    if phrases:
        why.append(f"phrase “{phrases[0]}”")
    if hit.item:
        why.append("a stored fact came from it")
    if in_time:
        why.append("in the time asked about")
    if own:
        why.append(f"said by the {'person' if q.speaker == 'user' else 'assistant'}, as asked")
    hit.why = why or ["bm25"]


def collect(
    conn: Connection,
    *,
    profile: str,
    message: str,
    now: datetime,
    tz: tzinfo | None,
    budget: int,
    skip_turns: set[int],
    skip_digests: set[int],
    query: Query | None = None,
) -> list[Line]:
    """Candidate RELEVANT HISTORY lines for ``message``, best ranked highest.

    Turn lines read ``[2026-05-01 09:00 #123] user: text``; digest lines
    ``[2026-05-01 session summary] narrative``. ``skip_turns``/``skip_digests`` are what other
    sections already carry. Ranks are 1 + the retrieval score (higher is better).
    """
    q = query if query is not None else analyse(message, now)
    if q.empty:
        return []
    hits: dict[int, _Hit] = {}
    idfs = _word_hits(conn, profile, q, hits, budget)
    digest_hits = _digest_matches(conn, profile, q)
    _trigram_hits(conn, profile, q, hits)
    _item_hits(conn, profile, q, hits)
    _time_hits(conn, profile, q, hits)
    scorer = (
        Scorer.for_idf(q, idfs) if idfs else Scorer.for_pool(q, (h.content for h in hits.values()))
    )
    for hit in hits.values():
        _score(hit, q, scorer)
    if DIGEST_SESSION_WEIGHT:
        weights = {d.session_id: w for d, w in digest_hits}
        for hit in hits.values():
            if hit.session_id in weights:
                hit.score += DIGEST_SESSION_WEIGHT * weights[hit.session_id]
    _neighbours(conn, profile, hits)
    per_line = max(LINE_MIN, int(budget * LINE_SHARE))
    lines: list[Line] = []
    # Only as many lines as the budget could ever hold are rendered (snippets cost time).
    keep = line_cap(budget)
    ranked = sorted(
        (h for h in hits.values() if h.turn_id not in skip_turns and h.content.strip()),
        key=lambda h: -h.score,
    )[:keep]
    updates = supersede.updates_for(conn, profile, (h.turn_id for h in ranked))
    _add_newer_turns(conn, profile, updates, hits, ranked, skip_turns)
    for hit in ranked:
        mark = f" ({hit.status})" if hit.status in ("interrupted", "error") else ""
        prefix = f"[{display(hit.ts, tz)} #{hit.turn_id}] {hit.role}{mark}: "
        body = snippet(hit.content, per_line, scorer.counter(hit.content))
        update = updates.get(hit.turn_id)
        if update is not None:
            body += "\n" + _changed(update, tz)
        lines.append(
            Line(
                text=entry(prefix, body),
                source=f"turn:{hit.turn_id}",
                rank=1.0 + hit.score,
                order=(from_stored(hit.ts).timestamp(), float(hit.turn_id)),
                why="; ".join(hit.why),
                turn_ids=(hit.turn_id,),
                same_as_turn=update is None,
            )
        )
    lines.extend(_digest_lines(digest_hits, conn, profile, q, tz, budget, skip_digests))
    return lines


def _changed(update: supersede.Update, tz: tzinfo | None) -> str:
    """The mark on a line whose fact changed later: when, and the value that holds now."""
    return supersede.note(update, tz)


def _add_newer_turns(
    conn: Connection,
    profile: str,
    updates: dict[int, supersede.Update],
    hits: dict[int, _Hit],
    ranked: list[_Hit],
    skip: set[int],
) -> None:
    """The turn each newest value came from joins ``ranked`` just above the old line it
    replaces (unless already there or shown in another section)."""
    present = {h.turn_id for h in ranked}
    wanted: dict[int, _Hit] = {}
    for hit in ranked:
        update = updates.get(hit.turn_id)
        source = update.newest.source_turn_id if update else None
        if source is None or source in present or source in skip or source in wanted:
            continue
        wanted[source] = hit
    if not wanted:
        return
    marks = ",".join("?" * len(wanted))
    rows = conn.execute(
        f"SELECT {_TURN_COLS} FROM turns t WHERE t.id IN ({marks}) AND t.profile = ?",
        (*wanted, profile),
    ).fetchall()
    for r in rows:
        old = wanted[r["id"]]
        hit = hits.get(r["id"]) or _Hit(
            r["id"], r["session_id"], r["role"], r["content"], r["ts"], r["status"]
        )
        hit.score = max(hit.score, old.score + 0.01)
        hit.why = [f"the newer value of #{old.turn_id}"]
        hits[r["id"]] = hit
        ranked.append(hit)
    ranked.sort(key=lambda h: -h.score)


def _digest_matches(
    conn: Connection, profile: str, q: Query
) -> list[tuple[digest_store.Digest, float]]:
    """Digests whose narrative or decisions match the message, best first, each with its
    normalised bm25, read in one query."""
    terms = _match_terms(q)
    if not terms:
        return []
    rows = conn.store.search_digests(profile, terms, DIGEST_HITS)
    best = max((-r["rank"] for r in rows), default=1.0) or 1.0
    return [(digest_store.row_to_digest(r), (-r["rank"]) / best) for r in rows]


def _digest_lines(
    matches: list[tuple[digest_store.Digest, float]],
    conn: Connection,
    profile: str,
    q: Query,
    tz: tzinfo | None,
    budget: int,
    skip: set[int],
) -> list[Line]:
    found = {d.id: (d, score) for d, score in matches}
    for span in q.times:
        rows = conn.execute(
            "SELECT * FROM digests WHERE profile = ? AND ended_at >= ? AND started_at < ? "
            "ORDER BY ended_at LIMIT 10",
            (profile, to_stored(span.start), to_stored(span.end)),
        ).fetchall()
        for r in rows:
            digest, score = found.get(r["id"], (digest_store.row_to_digest(r), 0.0))
            found[r["id"]] = (digest, score + 0.8)
    per_line = max(60, int(budget * DIGEST_SHARE))
    lines = []
    for d, score in found.values():
        if d.id in skip:
            continue
        body = d.narrative + ("\nDecided: " + "; ".join(d.decisions) if d.decisions else "")
        lines.append(
            Line(
                text=entry(
                    f"[{display(d.ended_at, tz, with_time=False)} session summary] ",
                    clip(body, per_line),
                ),
                source=f"digest:{d.id}",
                rank=0.9 + 0.8 * score,
                order=(from_stored(d.ended_at).timestamp(), 0.0),
                why=f"digest of session #{d.session_id} matched",
                turn_ids=d.source_turns,
            )
        )
    return lines
