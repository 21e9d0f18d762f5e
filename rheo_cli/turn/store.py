"""A turn's first step: the person's message is committed to the ledger before anything else
happens, so nothing they said is lost whatever fails later."""

from __future__ import annotations

import sqlite3
from typing import Any

from ..memory.ledger import turns as ledger
from ..memory.store import health
from ..services import Services

_NOT_THE_INDEX = ("locked", "busy", "readonly", "read-only", "full")
"""Words of errors a rebuilt search index cannot help with (a lock, a read-only or full disk)."""


def store_message(
    rt: Services,
    message: str,
    *,
    new_session: bool = False,
    session_id: int | None = None,
    meta: dict[str, Any] | None = None,
    repairs: list[str] | None = None,
) -> ledger.Appended:
    """Commit the person's turn (session detection included, unless ``session_id`` names the
    session to join) and return it. ``meta`` is stored with it (a front end's own ids, e.g.
    Telegram's update id), with the assistant talked to, from which rheo later knows whose
    memory the exchange feeds.

    If the insert fails on a damaged or missing search index (an FTS5 index derived from the
    turns), the indexes are rebuilt from the tables and the insert tried once more, with a
    note appended to ``repairs``. Raises sqlite3.Error when the ledger cannot be written."""
    if rt.assistant_name is not None:
        meta = {**(meta or {}), "assistant": rt.assistant_name}

    def append() -> ledger.Appended:
        return ledger.append_turn(
            rt.conn,
            profile=rt.profile,
            role="user",
            content=message,
            now=rt.now(),
            gap_s=rt.settings.gap_s,
            new_session=new_session,
            session_id=session_id,
            meta=meta,
        )

    try:
        return append()
    except sqlite3.DatabaseError as exc:
        if any(w in str(exc).lower() for w in _NOT_THE_INDEX):
            raise
        try:
            rebuilt = health.rebuild_indexes(rt.conn)
        except sqlite3.DatabaseError:
            raise exc from None
        appended = append()
        if repairs is not None:
            repairs.append(
                f"the search index was damaged ({' '.join(str(exc).split())[:120]}); "
                f"rebuilt {', '.join(rebuilt)} from the ledger"
            )
        return appended
