"""What a message would be sent as, without sending or keeping anything (``rheo context``,
the REPL's ``/context``, the MCP server's preview)."""

from __future__ import annotations

import contextlib
from typing import Any

from ..memory.facts import hotcache, keywords, requests
from ..memory.ledger import turns as ledger
from ..memory.store.db import tentative
from ..memory.store.errors import Unavailable
from ..memory.store.timeutil import to_stored
from ..services import Services
from .assemble import compose
from .store import store_message
from .wiring import honour_requests


def preview(
    rt: Services,
    message: str,
    *,
    budget: int | None = None,
    tools: list[Any] | None = None,
    new_session: bool = False,
    honour: bool = True,
) -> dict[str, Any]:
    """The context and request ``message`` would get, built by the very code a turn uses: the
    message is stored tentatively (session detection included), its explicit requests
    ("remember that ...", "forget that ...") are honoured as `rheo ask` honours them before
    the reply (``honour`` False: not — for callers whose messages rheo never honours),
    `assemble.compose` runs, and every write is rolled back, so nothing is kept and the
    preview is the request byte for byte. When a request is honoured the hot cache is
    bypassed meanwhile, so it never holds (nor loses) what the rollback undoes.

    Returns ``{"system": [...], "messages": [...], "sections": [{name, text, tokens, lines}],
    "context_tokens", "message_tokens", "budget", "session_id" (None when the message would
    open a new session), "new_session", "model", "tools", "notes"}``.
    """
    repairs: list[str] = []
    asks = honour and bool(requests.detect(keywords.own_words(message)))
    conn = rt.conn  # opened first: opening installs the hot cache
    # Memory written tentatively must not reach the cache: read the store alone then (the
    # same items `rheo ask` reads once its writes have dropped the cache).
    try:
        with hotcache.bypassed() if asks else contextlib.nullcontext(), tentative(conn):
            appended = store_message(rt, message, new_session=new_session, repairs=repairs)
            done = honour_requests(rt, appended.turn) if asks else []
            ctx, request = compose(
                rt, appended.turn, budget=budget, tools=tools, notes=repairs, requests=done
            )
        opened = appended.opened_session
    except Unavailable as exc:
        if "readonly" not in str(exc).lower():
            raise
        # A read-only store: `rheo ask` answers with what it reads, unstored and without
        # tools (nothing could be written), and so is it shown.
        unstored = ledger.Turn(
            id=0, profile=rt.profile, session_id=0, role="user", content=message,
            ts=to_stored(rt.now()),
        )  # fmt: skip
        ctx, request = compose(rt, unstored, budget=budget, tools=[], notes=repairs)
        ctx.notes.append(
            "this message would not be stored: cannot write the database: it is read-only "
            "(check its permissions)"
        )
        opened = new_session or ctx.session_id is None
    return {
        "model": rt.model,
        "assistant": rt.assistant_name,
        "session_id": None if opened else ctx.session_id,
        "new_session": opened,
        "budget": ctx.budget,
        "context_tokens": ctx.context_tokens,
        "message_tokens": ctx.message_tokens,
        "sections": [
            {
                "name": s.name,
                "text": s.render(),
                "tokens": s.tokens,
                "dropped": s.dropped,
                "lines": [
                    {
                        "text": ln.text,
                        "source": ln.source,
                        "rank": round(ln.rank, 4),
                        "why": ln.why,
                        "turn_ids": list(ln.turn_ids),
                        "tokens": ln.tokens,
                    }
                    for ln in s.lines
                ],
            }
            for s in ctx.sections
        ],
        "system": [{"text": b.text, "cache": b.cache} for b in request.system],
        "tools": [t.name for t in request.tools],
        "messages": request.messages,
        "notes": ctx.notes,
    }
