"""Putting an Assistant together for a command's services: tools and after-reply work."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from ..memory import jobs
from ..memory.ledger import sources
from ..memory.ledger import turns as ledger
from ..memory.store.timeutil import to_stored
from ..services import Services
from .assistant import Assistant


def tool_specs(assistant: str | None = None) -> list[Any]:
    """The tools offered to Claude in a chat call with ``assistant`` (None: rheo itself)."""
    from .tools import specs_for

    return specs_for(assistant)


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


def make_assistant(rt: Services, *, on_tool: Callable[[str, str], None] | None = None) -> Assistant:
    """An Assistant for ``rt``: memory tools, an extraction job after each reply and a digest
    job when a session closes (run by the background worker, see `background.worker.kick`).
    ``on_tool(name, summary)`` hears of each memory tool the model ran (the first line of
    what the tool answered)."""
    from .tools import run_tool

    def tool(call: Any, turn: ledger.Turn) -> str:
        answer = run_tool(rt, call, turn)
        if on_tool is not None:
            with contextlib.suppress(Exception):
                on_tool(call.name, (answer.strip().splitlines() or [""])[0][:200])
        return answer

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

    def on_message(turn: ledger.Turn) -> None:
        honour_requests(rt, turn)

    return Assistant(
        rt,
        on_message=on_message,
        tools=tool_specs(rt.assistant_name),
        run_tool=tool,
        after_reply=after_reply,
        on_session_closed=on_session_closed,
    )
