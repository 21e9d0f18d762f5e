"""Putting an Assistant together for a command's services: after-reply work, and the tools
its caller gives (rheo's memory tools: `rheo_cli.app.tools.chat`)."""

from __future__ import annotations

from ..memory import jobs
from ..memory.ledger import sources
from ..memory.ledger import turns as ledger
from ..memory.store.timeutil import to_stored
from ..providers.base import ToolSpec
from ..services import Services
from .assistant import Assistant, ToolRunner


def honour_requests(rt: Services, turn: ledger.Turn) -> list[str]:
    """Act on "remember that ..." / "forget that ..." in the person's stored ``turn`` before
    the model is called (see `memory.facts.requests`); returns what was done. Never raises:
    memory must not break the chat."""
    from ..memory.facts import requests

    try:
        return requests.honour(
            rt.conn,
            profile=turn.profile,
            turn_id=turn.id,
            text=turn.content,
            now=rt.now(),
            settings=rt.settings,
        )
    except Exception as exc:  # noqa: BLE001 - the turn goes on without it
        return [f"could not honour a memory request: {exc}"]


def make_assistant(
    rt: Services, *, tools: list[ToolSpec] | None = None, run_tool: ToolRunner | None = None
) -> Assistant:
    """An Assistant for ``rt``: the ``tools`` offered to the model and what runs their calls
    (none without them), "remember that ..." honoured when a message is stored, an
    extraction job after each reply and a digest job when a session closes (run by the
    background worker, see `background.worker.kick`)."""

    def after_reply(user_turn: ledger.Turn, reply: ledger.Turn) -> None:
        jobs.enqueue(rt.conn, profile=rt.profile, kind="extract", ref_id=reply.id, ts=reply.ts)

    def on_session_closed(session_id: int) -> None:
        if sources.imported_session(rt.conn, rt.profile, session_id):
            return  # imported history is digested only when the import asks (--extract)
        jobs.enqueue(
            rt.conn,
            profile=rt.profile,
            kind="digest",
            ref_id=session_id,
            ts=to_stored(rt.now()),
        )

    def on_message(turn: ledger.Turn) -> list[str]:
        return honour_requests(rt, turn)

    return Assistant(
        rt,
        on_message=on_message,
        tools=tools,
        run_tool=run_tool,
        after_reply=after_reply,
        on_session_closed=on_session_closed,
    )
