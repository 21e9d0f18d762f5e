"""What a message would be sent as, shown without sending or keeping anything: the
``rheo context`` preview (and its ``--explain`` table) and the REPL's ``/context``.

The request is built by the very code a turn uses (`turn.preview`: the message stored
tentatively, its explicit requests honoured, the context assembled, every write rolled back),
with the memory tools the chat would offer, so the preview is the request byte for byte.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..memory.ledger.sessions import session_numbers

if TYPE_CHECKING:
    from .app import App

__all__ = ["preview", "session_number"]


def preview(
    app: App, message: str, *, budget: int | None = None, new_session: bool = False
) -> dict[str, Any]:
    """The context and request ``message`` would get now from the App's assistant, with the
    chat's memory tools; ``budget``: the context's token budget (None: the configured one);
    ``new_session``: as if the message opened a new session. Nothing is stored.

    Returns ``{"model", "assistant", "session_id" (None when the message would open a new
    session), "new_session", "budget", "context_tokens", "message_tokens" (estimated
    tokens), "sections": [{"name", "text", "tokens", "dropped" (lines left out), "lines":
    [{"text", "source", "rank", "why", "turn_ids", "tokens"}]}], "system": [{"text",
    "cache"}], "tools": [names], "messages": [...] (as sent), "notes": [...]}``. Raises
    StoreError or sqlite3.Error when the store cannot be read."""
    from ..turn.preview import preview as build
    from .tools.chat import specs

    tools = specs(app.assistant_name)  # what a message here would offer the model
    return build(app, message, budget=budget, tools=tools, new_session=new_session)


def session_number(app: App, info: dict[str, Any]) -> int | None:
    """The number the person sees (``s3``) of the session a `preview` would join; None when
    the message would open a new session."""
    if info["new_session"] or info["session_id"] is None:
        return None
    session_id = int(info["session_id"])
    return session_numbers(app.conn, app.profile).get(session_id, session_id)
