"""A turn's first step: the person's message is committed to the ledger before anything else
happens, so nothing they said is lost whatever fails later."""

from __future__ import annotations

import contextlib
from typing import Any

from ..memory.ledger import turns as ledger
from ..memory.store.errors import StoreError
from ..services import Services


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

    A search index that cannot even be opened is rebuilt first (`api.Store.mend_indexes`),
    so the context is assembled with it; a damaged or missing index of the turns never keeps
    the turn out: the ledger rebuilds it, or stores the turn unindexed
    (`ledger.append_turn`). Each repair is a note appended to ``repairs``. Raises
    StoreError when the ledger cannot be written."""
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

    if (lost := rt.mend_lost_wal()) is not None and repairs is not None:
        repairs.append(lost)
    mended = None
    with contextlib.suppress(StoreError, MemoryError):  # a store that cannot be read fails below
        mended = rt.conn.store.mend_indexes(notify=False)
    if mended is not None and repairs is not None:
        repairs.append(mended)
    appended = append()
    if appended.repaired is not None and repairs is not None:
        repairs.append(appended.repaired)
    return appended
