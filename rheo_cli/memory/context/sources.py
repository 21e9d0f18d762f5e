"""Candidate lines for each context section, read from the store and ranked.

Every function here reads only. Lines are already rendered and escaped (`render.entry`), so
stored text cannot forge a header, and each carries its source row and the turns it stands for.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, tzinfo
from typing import TypeVar

from .. import due, windows
from ..facts import hotcache
from ..facts import items as item_store
from ..ledger import digests as digest_store
from ..ledger import turns as ledger
from ..ledger.pairing import in_reply_order
from ..ledger.sessions import previous_session
from ..retrieval import history as relevant
from ..retrieval.lines import (
    CURRENT_MEMORY,
    CURRENT_SESSION,
    EPISODIC,
    KNOWLEDGE,
    OPEN_ITEMS,
    RELEVANT_HISTORY,
    Line,
)
from ..retrieval.query import Query, analyse
from ..retrieval.relevance import COVERAGE_WEIGHT, Scorer
from ..store.api import Connection
from ..store.errors import DatabaseError, EngineError, NotFound
from ..store.settings import Settings
from ..store.timeutil import display, from_stored
from ..text.render import INDENT, clip, entry
from ..text.tokens import estimate
from .knowledge import knowledge_lines
from .turnview import TurnView

T = TypeVar("T")
MATCH_THRESHOLD = 0.5
"""Relevance (see `relevance`) from which a fact counts as matching the message."""
FACT_LINE_FLOOR = 10
"""Tokens a fact's line costs at least (its flags and line break): at most budget / this many
facts are rendered, the best ranked."""
UNMATCHED_SHARE = False
"""Whether facts that do not match the message may take CURRENT MEMORY's guaranteed share.
False: only matching and pinned facts do (and every fact when the message has no search
word); the others take what the budget has left once every more relevant line is in."""
PREVIOUS_SHARE = 0.2
"""Share of the budget the end of an undigested previous session may take (EPISODIC's) for a
message that leans on the conversation (`Query.follow_up`) or has no search word."""
PREVIOUS_SHARE_TOPIC = 0.1
"""The same for a message that names its subject: the last few turns."""
EPISODIC_BY_MATCH = True
"""Whether older digests rank by their match to a message with search words (see
`episodic_lines`)."""
DIGEST_MATCH_RANK = 0.9
"""Rank of an older digest that matches the message, plus 0.8 × its weighted coverage of the
message's words (RELEVANT HISTORY's digests rank 0.9 + 0.8 × their normalised bm25)."""
PREVIOUS_RANK = 9.0
"""Rank of that block: below this session's turns, above everything else (it is how the
conversation last stood)."""


def collect(
    conn: Connection,
    *,
    profile: str,
    message: str,
    now: datetime,
    tz: tzinfo | None,
    settings: Settings,
    session_id: int | None,
    before_turn_id: int | None,
    budget: int,
    assistant: str | None = None,
    unreadable: dict[str, str] | None = None,
    query: Query | None = None,
) -> dict[str, list[Line]]:
    """Candidate lines for every section, keyed by section name (see `context.ORDER`).

    Facts and open items are those ``assistant`` sees (`facts.scope`: the shared ones plus its
    own, its own winning on a topic; None: the shared ones only), read through the hot cache
    when one is installed (`facts.hotcache`).

    A section whose part of the store cannot be read (a damaged index, a missing table, a
    corrupt row) comes back empty, and ``unreadable`` (when given) gets section -> reason:
    memory never stops the chat. Without ``unreadable`` such errors are raised. ``query`` is
    the message's analysis when the caller has it (else it is made here)."""

    guarded = _Guard(unreadable)
    no_items: list[item_store.MemoryItem] = []
    none: list[Line] = []
    active = guarded(
        CURRENT_MEMORY,
        lambda: hotcache.active_items(conn, profile, assistant=assistant),
        no_items,
    )
    active = windows.current(active, now)  # a fact past its validity window is not current
    view = guarded(CURRENT_SESSION, lambda: TurnView.load(conn, profile, tz), TurnView.plain())
    query = query if query is not None else analyse(message, now)
    # How the last session ended matters most to a message that leans on the conversation;
    # one that names its subject gets a shorter end (its other turns can still match).
    previous_share = PREVIOUS_SHARE if query.follow_up or query.empty else PREVIOUS_SHARE_TOPIC
    out = {
        OPEN_ITEMS: guarded(OPEN_ITEMS, lambda: open_item_lines(active, now, tz, budget), none),
        EPISODIC: guarded(
            EPISODIC,
            lambda: previous_end_lines(
                conn, profile, session_id, tz, settings, budget, view, share=previous_share
            ),
            none,
        )
        + guarded(
            EPISODIC, lambda: episodic_lines(conn, profile, tz, settings, budget, query), none
        ),
        CURRENT_MEMORY: guarded(
            CURRENT_MEMORY,
            lambda: memory_lines(
                conn,
                profile,
                active,
                message,
                now,
                tz,
                settings,
                budget,
                query=query,
                assistant=assistant,
            ),
            none,
        ),
        CURRENT_SESSION: [],
    }
    if session_id is not None:
        sid = session_id
        out[CURRENT_SESSION] = guarded(
            CURRENT_SESSION,
            lambda: session_lines(conn, profile, sid, before_turn_id, tz, settings, budget, view),
            none,
        )
    skip_turns = _shown_turns(out, before_turn_id, view)
    skip_digests = _shown_digests(out)
    out[RELEVANT_HISTORY] = guarded(
        RELEVANT_HISTORY,
        lambda: relevant.collect(
            conn,
            profile=profile,
            message=message,
            query=query,
            now=now,
            tz=tz,
            budget=budget,
            skip_turns=skip_turns,
            skip_digests=skip_digests,
        ),
        none,
    )
    out[KNOWLEDGE] = guarded(KNOWLEDGE, lambda: knowledge_lines(conn, profile, query), none)
    return view.finish(out)


class _Guard:
    """Reads one section for `collect`: with ``unreadable`` (section -> reason) a store error
    leaves the section empty and records why; without it the error is raised."""

    def __init__(self, unreadable: dict[str, str] | None) -> None:
        self.unreadable = unreadable

    def __call__(self, section: str, read: Callable[[], T], empty: T) -> T:
        """``read()``, or ``empty`` when it fails and failures are being recorded."""
        if self.unreadable is None:
            return read()
        try:
            return read()
        except (
            DatabaseError,
            MemoryError,
            EngineError,
            ValueError,
            TypeError,
            KeyError,
        ) as exc:
            reason = " ".join(str(exc).split())[:160] or type(exc).__name__
            self.unreadable.setdefault(section, reason)
            return empty


def _shown_turns(
    out: dict[str, list[Line]], before_turn_id: int | None, view: TurnView
) -> set[int]:
    """Ids of the turns RELEVANT HISTORY should not bring again: those the current session's
    lines and the previous session's end show whole, the message's own turn
    (``before_turn_id``) and the turns ``view`` withholds."""
    skip_turns = {t for line in out[CURRENT_SESSION] for t in line.turn_ids}
    # The previous session's end stands for its turns only where it shows them whole: a turn
    # it had to clip can still bring its matching sentences as RELEVANT HISTORY.
    skip_turns |= {
        t
        for line in out[EPISODIC]
        if line.source.startswith("session:")
        for t in line.turn_ids
        if f"full text in turn #{t}" not in line.text
    }
    if before_turn_id is not None:
        skip_turns.add(before_turn_id)
    skip_turns |= view.withheld.turns
    return skip_turns


def _shown_digests(out: dict[str, list[Line]]) -> set[int]:
    """Ids of the digests EPISODIC already shows (its ``digest:<id>`` lines)."""
    return {
        int(line.source.split(":")[1])
        for line in out[EPISODIC]
        if line.source.startswith("digest:")
    }


def turn_prefix(turn: ledger.Turn, tz: tzinfo | None) -> str:
    """``[YYYY-MM-DD HH:MM] user: `` (with ``(interrupted)``/``(error)`` marks when so)."""
    mark = f" ({turn.status})" if turn.status in ("interrupted", "error") else ""
    return f"[{display(turn.ts, tz)}] {turn.role}{mark}: "


def session_lines(
    conn: Connection,
    profile: str,
    session_id: int,
    before_turn_id: int | None,
    tz: tzinfo | None,
    settings: Settings,
    budget: int,
    view: TurnView | None = None,
) -> list[Line]:
    """The active session's last turns (Rheo article §07: ~12), newest ranked highest.

    Empty failed replies are left out; a turn longer than about a third of the budget is
    clipped in the middle, with its id in the marker so the full text can be looked up.
    ``view`` leaves out turns a forgotten fact stands in and marks changed values.
    """
    turns = ledger.session_turns(
        conn, profile, session_id, limit=settings.session_turns + 4, before_id=before_turn_id
    )
    turns = [t for t in turns if t.content.strip()][-settings.session_turns :]
    turns = forked_start(conn, profile, session_id, settings) + turns
    turns = turns[-settings.session_turns :]
    # Two processes answering at once interleave their turns in the ledger; show each reply
    # right after the question it answers.
    turns = in_reply_order(turns)
    view = view or TurnView.plain()
    turns = view.turns(turns)
    per_line = max(60, int(budget * 0.35))
    lines = []
    for n, turn in enumerate(turns):
        body = clip(turn.content, per_line, marker=f"; full text in turn #{turn.id}")
        body += view.note(turn)
        lines.append(
            Line(
                text=entry(turn_prefix(turn, tz), body),
                source=f"turn:{turn.id}",
                rank=10.0 + n,
                order=(float(n),),
                why="recent turn of this session"
                if turn.session_id == session_id
                else f"turn of session #{turn.session_id}, which this session was forked from",
                turn_ids=(turn.id,),
            )
        )
    return lines


def forked_start(
    conn: Connection, profile: str, session_id: int, settings: Settings
) -> list[ledger.Turn]:
    """The start of a forked session (``rheo ask --fork N``): the last turns of the session
    it was forked from (up to ``settings.session_turns``, empty replies left out, oldest
    first), so its context begins where that one stood; [] for a session that is not a fork
    or whose origin was purged."""
    origin = ledger.fork_origin(conn, profile, session_id)
    if origin is None or origin == session_id:
        return []
    turns = ledger.session_turns(conn, profile, origin, limit=settings.session_turns + 4)
    return [t for t in turns if t.content.strip()][-settings.session_turns :]


def previous_end_lines(
    conn: Connection,
    profile: str,
    session_id: int | None,
    tz: tzinfo | None,
    settings: Settings,
    budget: int,
    view: TurnView | None = None,
    *,
    share: float = 0.2,
) -> list[Line]:
    """How the previous session ended, while it has no digest (just closed, the worker not run
    yet, or every model failing): its last turns (up to ``settings.session_turns``, each reply
    after its question), newest kept first within ``share`` of the budget, as one block
    headed "End of the previous session". Once the digest exists it replaces them — but for
    a session continued after its digest was written, the turns the digest does not cover
    (later than its end) are still shown, headed as such.

    ``session_id`` is the message's session (None: the message opens a new one, so the
    previous session is the latest). ``view`` leaves out turns a forgotten fact stands in and
    marks changed values.
    """
    previous = previous_session(conn, profile, session_id)
    if previous is None:
        return []
    covered = digest_store.digested_until(conn, profile, previous.id)
    if covered is not None and not _later(previous.last_turn_at, covered):
        return []
    if session_id is not None and ledger.fork_origin(conn, profile, session_id) == previous.id:
        return []  # a fork of it: its turns are already this session's start
    turns = ledger.session_turns(conn, profile, previous.id, limit=settings.session_turns + 4)
    if covered is not None:
        turns = [t for t in turns if _later(t.ts, covered)]
    turns = in_reply_order([t for t in turns if t.content.strip()])[-settings.session_turns :]
    view = view or TurnView.plain()
    turns = view.turns(turns)
    if not turns:
        return []
    cap = max(80, int(budget * share))
    per_turn = max(40, cap // 4)
    state = "not summarised yet" if covered is None else "after its digest"
    head = (
        f"End of the previous session ({display(previous.started_at, tz)} to "
        f"{display(previous.last_turn_at, tz)}; {state}), its last turns:"
    )
    used = estimate(head)
    picked: list[tuple[ledger.Turn, str]] = []
    for turn in reversed(turns):
        body = clip(turn.content, per_turn, marker=f"; full text in turn #{turn.id}")
        text = entry(turn_prefix(turn, tz), body + view.note(turn))
        cost = estimate(text) + 1
        if picked and used + cost > cap:
            break
        picked.insert(0, (turn, text))
        used += cost
    return [
        Line(
            text="\n".join([head, *(text for _, text in picked)]),
            source=f"session:{previous.id}",
            rank=PREVIOUS_RANK,
            order=(-1.0,),
            why=f"end of session #{previous.id}, "
            + ("which has no digest yet" if covered is None else "after its digest"),
            turn_ids=tuple(turn.id for turn, _ in picked),
        )
    ]


def _later(stored: object, than: str) -> bool:
    """Whether stored UTC time ``stored`` (text, or a datetime from PostgreSQL) is later than
    ``than``."""
    moment = stored if isinstance(stored, datetime) else from_stored(str(stored))
    return moment > from_stored(than)


def open_item_lines(
    active: list[item_store.MemoryItem], now: datetime, tz: tzinfo | None, budget: int
) -> list[Line]:
    """Open commitments (category ``open_item``), soonest due first, then newest; one whose
    due time has passed says OVERDUE."""
    per_line = max(40, int(budget * 0.1))
    lines = []
    for item in active:
        if item.category != "open_item":
            continue
        when = f"since {display(item.created_at, tz, with_time=False)}"
        if item.due_at:
            when += f", due {display(item.due_at, tz, with_time=False)}"
            if due.is_overdue(item.due_at, now):
                when += ", OVERDUE"
        due_key = from_stored(item.due_at).timestamp() if item.due_at else float("inf")
        lines.append(
            Line(
                text=entry(f"- ({when}) ", clip(item.content_text(), per_line)),
                source=f"item:{item.id}",
                rank=5.0 - min(1.0, max(0.0, due_key / 1e11)) + (0.5 if item.pinned else 0.0),
                order=(due_key, float(item.id)),
                why="open commitment"
                + (f", due {display(item.due_at, tz, with_time=False)}" if item.due_at else ""),
                turn_ids=(item.source_turn_id,) if item.source_turn_id else (),
                essential=True,
            )
        )
    return lines


def episodic_lines(
    conn: Connection,
    profile: str,
    tz: tzinfo | None,
    settings: Settings,
    budget: int,
    query: Query | None = None,
) -> list[Line]:
    """The last digests (Rheo article §04: five), newest first, each dated with its session's
    end.

    For a message with search words (``query``) only the newest digest is guaranteed
    EPISODIC's share (how the last session went); the older ones rank by how well they match
    the message (`DIGEST_MATCH_RANK`), on the scale of RELEVANT HISTORY's digests, and those
    matching nothing rank below every other line. Without search words ("where were we?")
    they rank newest first above history, as they always did."""
    per_line = max(60, int(budget * 0.15))
    recent = digest_store.recent_digests(conn, profile, settings.digests)
    topical = bool(query is not None and query.terms and EPISODIC_BY_MATCH)
    scorer = None
    if topical and query is not None:
        scorer = Scorer.for_pool(query, (_digest_body(d) for d in recent))
    lines = []
    for n, digest in enumerate(recent):
        body = _digest_body(digest)
        rank = 1.5 - 0.1 * n
        why = f"digest of session #{digest.session_id}"
        if scorer is not None and n > 0:
            coverage, matched, _ = scorer.score(body)
            rank = DIGEST_MATCH_RANK + 0.8 * coverage if matched else 0.5 - 0.05 * n
            why += "; matched: " + ", ".join(matched[:6]) if matched else ""
        lines.append(
            Line(
                text=entry(f"[{display(digest.ended_at, tz)}] ", clip(body, per_line)),
                source=f"digest:{digest.id}",
                rank=rank,
                order=(float(n),),
                why=why,
                turn_ids=digest.source_turns,
                guaranteed=n == 0 or scorer is None,
            )
        )
    return lines


def _digest_body(digest: digest_store.Digest) -> str:
    """A digest's narrative, then its decisions."""
    body = digest.narrative
    if digest.decisions:
        body += "\nDecided: " + "; ".join(digest.decisions)
    return body


def memory_lines(
    conn: Connection,
    profile: str,
    active: list[item_store.MemoryItem],
    message: str,
    now: datetime,
    tz: tzinfo | None,
    settings: Settings,
    budget: int,
    *,
    query: Query | None = None,
    assistant: str | None = None,
) -> list[Line]:
    """Active facts: those whose topic or content match the message first (FTS5 over items,
    the Solid# article's topic-match boosting, graded by `relevance`), then by effective confidence.

    A fact that matches ranks 1 + its relevance (with the history hits); one that doesn't
    ranks below 1, by confidence, and takes only budget nobody more relevant needs.
    """
    facts = [i for i in active if i.category != "open_item"]
    query = query if query is not None else analyse(message, now)
    scorer = Scorer.for_pool(query, (f"{i.topic} {i.content_text()}" for i in facts))
    # Active facts are few (the cap): each is scored directly; the FTS index over items
    # narrows them first only past a few hundred.
    candidates: set[int] | None = None
    if len(facts) > 300 and not query.empty:
        candidates = {
            i.id
            for i, _ in item_store.search_items(
                conn, profile, message, limit=300, assistant=assistant
            )
        }
    per_line = max(40, int(budget * 0.1))
    scored: list[tuple[float, bool, float, list[str], item_store.MemoryItem]] = []
    for item in facts:
        confidence = item.effective(now, settings)
        relevance: float = 0.0
        matched: list[str] = []
        if not query.empty and (candidates is None or item.id in candidates):
            text_of_item = f"{item.topic} {item.content_text()}"
            coverage, matched, _phrases = scorer.score(text_of_item)
            # No bm25 here: coverage stands in for it, on the history hits' scale.
            relevance = coverage * (1 + 1 / COVERAGE_WEIGHT) if matched else 0.0
        hit = relevance >= MATCH_THRESHOLD
        rank = 1.0 + relevance + 0.3 * confidence if hit else 0.9 * confidence
        rank += 0.5 if item.pinned else 0.0
        scored.append((rank, hit, confidence, matched, item))
    # Only as many facts as the budget could ever hold are rendered (the best ranked); a
    # fact's line costs at least `FACT_LINE_FLOOR` tokens.
    scored.sort(key=lambda entry_: (-entry_[0], -entry_[4].id))
    lines = []
    for rank, hit, confidence, matched, item in scored[: max(20, budget // FACT_LINE_FLOOR)]:
        flags = [item.category, display(item.reinforced_at, tz, with_time=False)]
        if item.pinned:
            flags.append("pinned")
        text = entry(f"- ({', '.join(flags)}) ", clip(item.content_text(), per_line))
        if item.conflict_with:
            try:
                older = item_store.get_item(conn, profile, item.conflict_with).content_text()
            except NotFound:
                older = "?"
            text += "\n" + entry(
                INDENT,
                f"(contradicts an earlier fact, also confident: {clip(older, per_line)!r}; "
                "confirm with the person if it matters)",
            )
        if hit:
            why = "matched: " + ", ".join(matched[:6]) if matched else "matched (bm25)"
        else:
            why = f"confidence {confidence:.2f}"
        lines.append(
            Line(
                text=text,
                source=f"item:{item.id}",
                rank=rank,
                order=(-(1.0 if hit else 0.0), -confidence, -float(item.id)),
                why=why,
                turn_ids=(item.source_turn_id,) if item.source_turn_id else (),
                essential=hit,
                guaranteed=hit or item.pinned or UNMATCHED_SHARE or query.empty,
                same_as_turn=not item.conflict_with,
            )
        )
    return lines
