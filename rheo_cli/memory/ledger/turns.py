"""The ledger (Rheo article §03, layer 0): every turn, append-only, with FTS5 keyword search.

A turn is written in its own transaction before anything that might fail (the model call), so a
crash, a kill or an API outage never loses what the person said. The database refuses UPDATE
and DELETE on ``turns`` (triggers in migration 1); session bookkeeping lives in `sessions`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..store import crash
from ..store.api import Connection, Row
from ..store.db import write
from ..store.errors import InvalidInput, NotFound
from ..store.timeutil import to_stored
from ..text import bm25, fts
from .sessions import Session, attach_turn

ROLES = ("user", "assistant")
STATUSES = ("ok", "interrupted", "error")


@dataclass(frozen=True)
class Usage:
    """Token usage the provider reported for one assistant turn (all counts in tokens)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def to_json(self) -> dict[str, int]:
        """The usage as a plain dict with the four counts."""
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


@dataclass(frozen=True)
class Turn:
    """One ledger row. ``ts`` is stored UTC text; ``status``/``model``/``usage`` are None on
    user turns."""

    id: int
    profile: str
    session_id: int
    role: str
    content: str
    ts: str
    model: str | None = None
    status: str | None = None
    usage: Usage | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """JSON shape used by ``--json`` output: id, role, content, ts, session_id, ..."""
        out: dict[str, Any] = {
            "id": self.id,
            "role": self.role,
            "content": self.content,
            "ts": self.ts,
            "session_id": self.session_id,
            "profile": self.profile,
        }
        if self.role == "assistant":
            out["model"] = self.model
            out["status"] = self.status
            out["usage"] = self.usage.to_json() if self.usage else None
        if self.meta:
            out["meta"] = self.meta
        return out


@dataclass(frozen=True)
class Appended:
    """What `append_turn` did: the stored turn, and the session change it caused.

    ``closed_session`` is the previous session when this turn opened a new one (its digest is
    now due), else None.
    """

    turn: Turn
    opened_session: bool
    closed_session: Session | None
    repaired: str | None = None
    """What was done to a damaged search index to store the turn (one line), else None."""


_COLUMNS = (
    "id, profile, session_id, role, content, ts, model, status, input_tokens, output_tokens, "
    "cache_read_tokens, cache_write_tokens, meta"
)
_T_COLUMNS = ", ".join("t." + c.strip() for c in _COLUMNS.split(","))
SEARCH_WINDOW = 100_000
"""History search ranks the newest this-many turns first (see `search_turns`)."""
RANKED_MAX = 5_000
"""A search matching more turns than this (in the window) lists the newest, unranked."""


def _row_to_turn(row: Row) -> Turn:
    usage = None
    if row["role"] == "assistant":
        usage = Usage(
            input_tokens=row["input_tokens"] or 0,
            output_tokens=row["output_tokens"] or 0,
            cache_read_tokens=row["cache_read_tokens"] or 0,
            cache_write_tokens=row["cache_write_tokens"] or 0,
        )
    return Turn(
        id=row["id"],
        profile=row["profile"],
        session_id=row["session_id"],
        role=row["role"],
        content=row["content"],
        ts=row["ts"],
        model=row["model"],
        status=row["status"],
        usage=usage,
        meta=json.loads(row["meta"]) if row["meta"] and row["meta"] != "{}" else {},
    )


def append_turn(
    conn: Connection,
    *,
    profile: str,
    role: str,
    content: str,
    now: datetime,
    gap_s: float,
    session_id: int | None = None,
    new_session: bool = False,
    model: str | None = None,
    status: str | None = None,
    usage: Usage | None = None,
    meta: dict[str, Any] | None = None,
) -> Appended:
    """Append one turn and commit it; return the stored turn and any session change.

    Session detection (Rheo article §03): unless ``session_id`` pins the turn to a session (an
    assistant
    reply joins its question's session), a turn more than ``gap_s`` seconds after the previous
    turn of the profile, or with ``new_session``, opens a new session. ``now`` is the turn's
    time (aware datetime; stored as UTC). Assistant turns need a ``status`` in STATUSES; user
    turns must not have one.
    Raises InvalidInput for a bad role/status, NotFound for a ``session_id`` of another profile.

    A damaged or missing search index never keeps a turn out of the ledger: a store whose
    index can be damaged on its own mends it and stores the turn, or stores it without
    indexing it (the index catches up at 'rheo doctor --repair'), and ``repaired`` says
    which (`api.Store.through_damaged_index`). Raises StoreError (Busy after the bounded
    wait) when the ledger itself cannot be written.
    """
    if role not in ROLES:
        raise InvalidInput(f"role must be one of {ROLES}, not {role!r}")
    if role == "assistant" and status not in STATUSES:
        raise InvalidInput(f"an assistant turn needs a status in {STATUSES}")
    if role == "user" and status is not None:
        raise InvalidInput("a user turn has no status")
    ts = to_stored(now)
    args = (profile, role, content, ts, gap_s, session_id, new_session, model, status, usage, meta)
    appended, note = conn.store.through_damaged_index("turns", lambda: _append(conn, *args))
    if note is None:
        return appended
    return Appended(appended.turn, appended.opened_session, appended.closed_session, note)


def _append(
    conn: Connection,
    profile: str,
    role: str,
    content: str,
    ts: str,
    gap_s: float,
    session_id: int | None,
    new_session: bool,
    model: str | None,
    status: str | None,
    usage: Usage | None,
    meta: dict[str, Any] | None,
) -> Appended:
    """`append_turn`'s write, in one transaction."""
    with write(conn):
        session, opened, closed = attach_turn(
            conn,
            profile=profile,
            ts=ts,
            gap_s=gap_s,
            session_id=session_id,
            new_session=new_session,
        )
        u = usage or Usage()
        cur = conn.execute(
            "INSERT INTO turns(profile, session_id, role, content, ts, model, status, "
            "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, meta) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                profile,
                session.id,
                role,
                content,
                ts,
                model,
                status,
                u.input_tokens if usage else None,
                u.output_tokens if usage else None,
                u.cache_read_tokens if usage else None,
                u.cache_write_tokens if usage else None,
                json.dumps(meta or {}, ensure_ascii=False),
            ),
        )
        turn_id = cur.lastrowid
        crash.reach("turn.append")
    assert turn_id is not None
    turn = Turn(
        id=turn_id,
        profile=profile,
        session_id=session.id,
        role=role,
        content=content,
        ts=ts,
        model=model,
        status=status,
        usage=usage if role == "assistant" else None,
        meta=meta or {},
    )
    return Appended(turn=turn, opened_session=opened, closed_session=closed)


def get_turn(conn: Connection, profile: str, turn_id: int) -> Turn:
    """The turn ``turn_id`` of ``profile``; raises NotFound if absent or of another profile."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM turns WHERE id = ? AND profile = ?", (turn_id, profile)
    ).fetchone()
    if row is None:
        raise NotFound(f"no turn #{turn_id} in profile {profile!r}")
    return _row_to_turn(row)


def get_turns(conn: Connection, profile: str, ids: Iterable[int]) -> list[Turn]:
    """The turns with these ids in ``profile``, in id order; missing ids are skipped."""
    wanted = sorted(set(ids))
    out: list[Turn] = []
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM turns WHERE profile = ? AND id IN ({marks}) ORDER BY id",
            (profile, *chunk),
        ).fetchall()
        out.extend(_row_to_turn(r) for r in rows)
    return out


def recent_turns(conn: Connection, profile: str, limit: int = 20) -> list[Turn]:
    """The last ``limit`` turns of the profile in time (by ``ts``, then id: imported history
    sorts by its own dates), oldest first."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM turns WHERE profile = ? ORDER BY ts DESC, id DESC LIMIT ?",
        (profile, limit),
    ).fetchall()
    return [_row_to_turn(r) for r in reversed(rows)]


def session_turns(
    conn: Connection,
    profile: str,
    session_id: int,
    *,
    limit: int | None = None,
    before_id: int | None = None,
) -> list[Turn]:
    """Turns of one session, oldest first: the last ``limit`` of them (all when None), only
    those with id < ``before_id`` when given."""
    sql = f"SELECT {_COLUMNS} FROM turns WHERE session_id = ? AND profile = ?"
    args: list[Any] = [session_id, profile]
    if before_id is not None:
        sql += " AND id < ?"
        args.append(before_id)
    sql += " ORDER BY id DESC"
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    rows = conn.execute(sql, args).fetchall()
    return [_row_to_turn(r) for r in reversed(rows)]


def replies_with_content(
    conn: Connection, profile: str, question: Turn, content: str
) -> list[Turn]:
    """The replies stored after ``question`` in its session whose text is exactly
    ``content``, oldest first (callers check ``meta.reply_to``)."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM turns WHERE session_id = ? AND profile = ? AND id > ? "
        "AND role = 'assistant' AND content = ? ORDER BY id",
        (question.session_id, profile, question.id, content),
    ).fetchall()
    return [_row_to_turn(r) for r in rows]


@dataclass(frozen=True)
class TurnUsage:
    """What one reply cost: its turn ``id``, ``session_id``, ``ts`` (stored UTC text), the
    ``model`` that answered (None when unknown), the four token counts (tokens) and
    ``cost_usd``, the price the provider reported for it (US dollars; Claude Code does),
    else None."""

    id: int
    session_id: int
    ts: str
    model: str | None
    usage: Usage
    cost_usd: float | None


def usage_rows(conn: Connection, profile: str, *, since: str | None = None) -> list[TurnUsage]:
    """The profile's replies that have token usage, oldest first; only those at or after
    ``since`` (stored UTC text, `timeutil.to_stored`) when given."""
    sql = (
        "SELECT id, session_id, ts, model, input_tokens, output_tokens, cache_read_tokens, "
        "cache_write_tokens, meta FROM turns WHERE profile = ? AND role = 'assistant' "
        "AND (input_tokens IS NOT NULL OR output_tokens IS NOT NULL)"
    )
    args: list[Any] = [profile]
    if since is not None:
        sql += " AND ts >= ?"
        args.append(since)
    rows = conn.execute(sql + " ORDER BY id", args).fetchall()
    return [_usage_of(r) for r in rows]


def _usage_of(row: Row) -> TurnUsage:
    cost = None
    if row["meta"] and row["meta"] != "{}":
        try:
            found = json.loads(row["meta"]).get("cost_usd")
        except (ValueError, AttributeError):
            found = None
        if isinstance(found, int | float) and not isinstance(found, bool):
            cost = float(found)
    return TurnUsage(
        id=row["id"],
        session_id=row["session_id"],
        ts=row["ts"],
        model=row["model"],
        usage=Usage(
            input_tokens=row["input_tokens"] or 0,
            output_tokens=row["output_tokens"] or 0,
            cache_read_tokens=row["cache_read_tokens"] or 0,
            cache_write_tokens=row["cache_write_tokens"] or 0,
        ),
        cost_usd=cost,
    )


FORK_OF = "fork_of"
"""The meta key, on a session's first turn, naming the session (its id) it was forked from:
its turns are the start of the fork's context (`fork_origin`)."""


def fork_origin(conn: Connection, profile: str, session_id: int) -> int | None:
    """The id of the session ``session_id`` was forked from (``rheo ask --fork``): the
    `FORK_OF` key of its first turn's meta; None when it was not forked (or has no turn)."""
    row = conn.execute(
        "SELECT meta FROM turns WHERE session_id = ? AND profile = ? ORDER BY id LIMIT 1",
        (session_id, profile),
    ).fetchone()
    if row is None or not row["meta"] or row["meta"] == "{}":
        return None
    try:
        origin = json.loads(row["meta"]).get(FORK_OF)
    except (ValueError, AttributeError):  # a meta that is not a JSON object
        return None
    return origin if isinstance(origin, int) and not isinstance(origin, bool) else None


def search_turns(
    conn: Connection,
    profile: str,
    query: str,
    *,
    limit: int = 20,
    any_term: bool = False,
) -> list[tuple[Turn, float]]:
    """Keyword search over the profile's ledger: ``[(turn, score)]``, best first.

    Every word must match unless ``any_term``; the query is made safe by `fts.terms`, so any
    text a person types (``C++``, ``"quoted"``, ``AND``, ``-x``, ``a:b``, ``*``, ``(``, emoji, CJK)
    searches without error. ``score`` is minus the turn's bm25 (lower is better, negative;
    0.0 for turns listed newest first, unranked). Text with no searchable word returns [].

    Isolation: every search is scoped to the profile inside the index (`api.Store.turn_ids`), so
    candidates are chosen among its own turns before any LIMIT, and bm25 uses the profile's own
    statistics (`text.bm25`): the same profile data gives the same results whatever other profiles
    hold. Ranking every match of a common word costs time that grows with the ledger, so the best
    matches among the profile's newest `SEARCH_WINDOW` turns come first, then, when those are fewer
    than ``limit``, the best older ones; a query matching more than `RANKED_MAX` of them (``the``)
    lists its newest matches instead.
    """
    runs = fts.CJK_RUN.findall(query[: fts.MAX_QUERY_CHARS])
    if runs:
        return _cjk_search(conn, profile, runs[:8], limit)
    found_terms = fts.terms(query)
    if not found_terms:
        return []
    newest = conn.execute("SELECT max(id) FROM turns WHERE profile = ?", (profile,)).fetchone()[0]
    if newest is None:
        return []
    cutoff = max(0, int(newest) - SEARCH_WINDOW)
    window = _matching(conn, profile, found_terms, any_term, cutoff, None, RANKED_MAX + 1)
    if len(window) > RANKED_MAX:
        return [(t, 0.0) for t in reversed(get_turns(conn, profile, window[:limit]))]
    ranked = _rank(conn, profile, window, found_terms, limit)
    if len(ranked) < limit and cutoff > 0:
        older = _matching(conn, profile, found_terms, any_term, None, cutoff, RANKED_MAX)
        ranked += _rank(conn, profile, older, found_terms, limit - len(ranked))
    return ranked


def _matching(
    conn: Connection,
    profile: str,
    terms: list[str],
    any_term: bool,
    newer_than: int | None,
    up_to: int | None,
    limit: int,
) -> list[int]:
    """Ids of ``profile``'s turns matching ``terms`` (any, or all), newest first, with id >
    ``newer_than`` and id <= ``up_to`` where given (`api.Store.turn_ids`)."""
    return conn.store.turn_ids(
        profile, terms, any_term=any_term, newer_than=newer_than, up_to=up_to, limit=limit
    )


DF_CAP = 2_000
"""A word's document frequency is counted up to this many of the profile's turns; a word in
more is common (weighs little, and its holders are not listed)."""
RERANK = 100
"""At most this many candidates (at least 5 × the limit) are read and ranked by full bm25."""


def profile_size(conn: Connection, profile: str) -> int:
    """How many turns ``profile`` holds, from its sessions' counters (cheap at any size)."""
    row = conn.execute(
        "SELECT coalesce(sum(turns), 0) FROM sessions WHERE profile = ?", (profile,)
    ).fetchone()
    return int(row[0])


def term_frequency(conn: Connection, profile: str, term: str, cap: int) -> list[int]:
    """Ids of ``profile``'s turns holding ``term`` (an FTS5-safe term), at most ``cap``."""
    return conn.store.term_turn_ids(profile, term, cap)


def newest_matching(conn: Connection, profile: str, terms: list[str], limit: int) -> list[int]:
    """Ids of ``profile``'s newest ``limit`` turns holding any of ``terms`` (FTS5-safe
    terms), newest first."""
    return conn.store.newest_turn_ids(profile, terms, limit)


def _rank(
    conn: Connection,
    profile: str,
    ids: list[int],
    terms: list[str],
    limit: int,
) -> list[tuple[Turn, float]]:
    """The best ``limit`` of the profile's turns ``ids`` (newest first), by bm25 over the
    profile's own statistics, ties newest first.

    Two steps, both on the profile's data alone: the candidates are ordered by the summed
    inverse document frequency of the terms each holds (from the terms' posting lists; a
    common term, in more than `DF_CAP` turns, counts for all), and the best `RERANK` (at
    least 5 × ``limit``) are read and ranked by full bm25 with term frequencies and lengths.
    """
    if not ids or limit <= 0:
        return []
    total = max(1, profile_size(conn, profile))
    holders: list[set[int] | None] = []
    dfs: list[int] = []
    coverage = dict.fromkeys(ids, 0.0)
    for term in terms:
        rowids = term_frequency(conn, profile, term, DF_CAP + 1)
        common = len(rowids) > DF_CAP
        df = max(len(rowids), total // 20) if common else len(rowids)
        dfs.append(df)
        held = None if common else set(rowids)
        holders.append(held)
        if held is not None:  # a common term counts for every candidate: no change in order
            idf = bm25.idf(total, df)
            for rowid in held:
                if rowid in coverage:
                    coverage[rowid] += idf
    # ``ids`` are newest first; a stable sort keeps that order among equals.
    chosen = sorted(ids, key=coverage.__getitem__, reverse=True)[: max(RERANK, 5 * limit)]
    turns = get_turns(conn, profile, chosen)
    values = bm25.scores(
        [t.content for t in turns], [t.id for t in turns], terms, total, dfs, holders
    )
    order = sorted(range(len(turns)), key=lambda i: (-values[i], -turns[i].id))[:limit]
    return [(turns[i], -values[i]) for i in order]


CJK_SCAN = 20_000
"""A one- or two-character CJK search (too short for trigrams) reads this many newest turns."""


def _cjk_search(
    conn: Connection, profile: str, runs: list[str], limit: int
) -> list[tuple[Turn, float]]:
    """Turns holding every run of CJK text, newest first: runs of three or more characters
    through the trigram index, shorter ones by a bounded scan of the newest turns."""
    ids: set[int] | None = None
    plain = conn.cursor()
    plain.row_factory = None
    for run in dict.fromkeys(runs):
        if len(run) >= 3:
            found = set(conn.store.cjk_turn_ids(profile, run, 5000))
        else:
            plain.execute(
                "SELECT id FROM (SELECT id, content FROM turns WHERE profile = ? "
                "ORDER BY id DESC LIMIT ?) AS recent WHERE content LIKE ? ESCAPE '\\'",
                (profile, CJK_SCAN, "%" + run.replace("%", "\\%").replace("_", "\\_") + "%"),
            )
            found = {r[0] for r in plain.fetchall()}
        ids = found if ids is None else ids & found
    if not ids:
        return []
    newest = sorted(ids, reverse=True)[: limit * 4]
    turns = [t for t in get_turns(conn, profile, newest)][::-1]
    return [(t, 0.0) for t in turns[:limit]]


def count_turns(conn: Connection, profile: str) -> int:
    """How many turns the profile has."""
    return int(
        conn.execute("SELECT count(*) FROM turns WHERE profile = ?", (profile,)).fetchone()[0]
    )


def last_turn_ids(turns: Sequence[Turn]) -> list[int]:
    """The ids of ``turns`` (a convenience for JSON output)."""
    return [t.id for t in turns]


def unanswered_question(conn: Connection, profile: str) -> Turn | None:
    """The profile's last user turn when its reply failed (an ``error`` turn follows it, or no
    turn at all), to be sent again without storing it twice; None when it was answered (or
    interrupted by the person) or there is no question. Imported history is not looked at."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM turns WHERE profile = ? AND role = 'user' "
        "AND source_key IS NULL ORDER BY id DESC LIMIT 1",
        (profile,),
    ).fetchone()
    if row is None:
        return None
    question = _row_to_turn(row)
    reply = conn.execute(
        "SELECT status FROM turns WHERE profile = ? AND id > ? AND source_key IS NULL "
        "ORDER BY id DESC LIMIT 1",
        (profile, question.id),
    ).fetchone()
    if reply is None or reply["status"] == "error":
        return question
    return None
