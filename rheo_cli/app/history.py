"""The ledger read back for a person: turns found by words or the latest ones, sessions and
their numbers, session digests, and what the Telegram bot asks of the turns it stored.

Every function takes the `App` first and reads its profile only. Turns, sessions and digests
are the engine's dataclasses (`Turn`, `Session`, `Digest`): times are stored UTC text (show
them with `app.text.display` or `ui.output.local`), ``to_json()`` gives the ``--json`` shape.
Session ids are the store's; the person sees per-profile numbers (``s3``), `session_numbers`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..memory.ledger import digests as ledger_digests
from ..memory.ledger import sessions as ledger_sessions
from ..memory.ledger import turns as ledger
from ..memory.ledger.digests import Digest
from ..memory.ledger.sessions import Session
from ..memory.ledger.turns import Turn

if TYPE_CHECKING:
    from .app import App

__all__ = [
    "RECENT_TURNS",
    "Digest",
    "Session",
    "Turn",
    "digest",
    "digests",
    "has_reply",
    "last_question",
    "pending_question",
    "recent_turns",
    "search_turns",
    "session",
    "session_numbers",
    "sessions",
    "stored_question",
]

RECENT_TURNS = 50
"""How far back (turns of the profile) the Telegram questions are looked for."""


def search_turns(app: App, query: str, *, limit: int = 20) -> list[tuple[Turn, float]]:
    """Turns holding every word of ``query`` (``"a phrase"``, ``prefix*``; any text is
    searched safely), best first, at most ``limit``: ``[(turn, score)]``, ``score`` minus
    the bm25 rank (0.0 for turns listed newest first, unranked)."""
    return ledger.search_turns(app.conn, app.profile, query, limit=limit)


def recent_turns(app: App, limit: int = 20) -> list[Turn]:
    """The profile's last ``limit`` turns in time, oldest first."""
    return ledger.recent_turns(app.conn, app.profile, limit)


def session_numbers(app: App) -> dict[int, int]:
    """``{session id: number the person sees}`` for every session of the profile."""
    return ledger_sessions.session_numbers(app.conn, app.profile)


def sessions(app: App, limit: int = 20) -> list[Session]:
    """The profile's last ``limit`` sessions, newest first (by their last turn's time), each
    with its number and turn count."""
    return ledger_sessions.list_sessions(app.conn, app.profile, limit=limit)


def session(app: App, number: int) -> tuple[Session, list[Turn]]:
    """Session ``s<number>`` and all its turns, oldest first. Raises NotFound when the
    profile has no such session (never had, or it was purged)."""
    found = ledger_sessions.session_by_number(app.conn, app.profile, number)
    return found, ledger.session_turns(app.conn, app.profile, found.id)


def digests(app: App, limit: int = 20) -> list[Digest]:
    """The profile's last ``limit`` session digests, newest session first."""
    return ledger_digests.list_digests(app.conn, app.profile, limit=limit)


def digest(app: App, digest_id: int) -> Digest:
    """Digest ``digest_id`` of the profile. Raises NotFound."""
    return ledger_digests.get_digest(app.conn, app.profile, digest_id)


def _chat(turn: Turn) -> dict[str, Any] | None:
    """The ``telegram`` metadata of a person's turn (``chat_id``, ``update_id``,
    ``message_id``), or None for a turn that did not come from Telegram."""
    tg = turn.meta.get("telegram") if turn.role == "user" else None
    return tg if isinstance(tg, dict) else None


def stored_question(app: App, chat_id: int, update_id: int) -> Turn | None:
    """The person's turn already stored for Telegram update ``update_id`` of ``chat_id`` (a
    redelivered update), looked for among the last `RECENT_TURNS` turns; None when new."""
    for turn in ledger.recent_turns(app.conn, app.profile, RECENT_TURNS):
        tg = _chat(turn)
        if tg is not None and tg.get("update_id") == update_id and tg.get("chat_id") == chat_id:
            return turn
    return None


def _replies(app: App, question: Turn) -> list[Turn]:
    return [
        t
        for t in ledger.recent_turns(app.conn, app.profile, RECENT_TURNS)
        if t.role == "assistant" and t.meta.get("reply_to") == question.id
    ]


def has_reply(app: App, question: Turn) -> bool:
    """True when a reply to ``question`` is stored (ok, interrupted or error)."""
    return bool(_replies(app, question))


def last_question(app: App, chat_id: int) -> tuple[Turn, bool] | None:
    """The newest question stored from Telegram chat ``chat_id`` (among the last
    `RECENT_TURNS` turns) and whether a reply to it came whole (status ok); None when the
    chat has none."""
    for turn in reversed(ledger.recent_turns(app.conn, app.profile, RECENT_TURNS)):
        tg = _chat(turn)
        if tg is not None and tg.get("chat_id") == chat_id:
            return turn, any(r.status == "ok" for r in _replies(app, turn))
    return None


def pending_question(app: App, chat_id: int) -> Turn | None:
    """The profile's newest turn when it is a question from Telegram chat ``chat_id`` with
    nothing after it (a run that died before replying); None otherwise."""
    newest = ledger.recent_turns(app.conn, app.profile, 1)
    if not newest:
        return None
    tg = _chat(newest[0])
    return newest[0] if tg is not None and tg.get("chat_id") == chat_id else None
