"""The memory tools in rheo's own chat (Rheo article §05): the tools of `specs` the chat
offers (``write_memory``, ``memory_search``, ``memory_list``, ``chat_search``; why not the
others: `specs`), given to the model with each chat call and run by `actions.call` — the
same schema, check and output an MCP client gets.

Whatever the tool input says, rheo enforces ownership: the profile, the source turn and the
assistant are the current turn's (`caller.Caller.chat`), and a write goes through the
memory write path. In a chat with a named assistant, ``write_memory`` also takes ``scope``:
``shared`` (about the person, every assistant sees it; the default) or ``assistant`` (this
assistant's own work) — never which assistant.
"""

from __future__ import annotations

from collections.abc import Callable

from ...memory.ledger import turns as ledger
from ...providers.base import ToolCall, ToolSpec
from ...turn import wiring
from ...turn.assistant import Assistant
from ...turn.converse import ToolOutput
from ..app import App
from . import actions
from .caller import Caller
from .specs import offered


def specs(assistant: str | None = None) -> list[ToolSpec]:
    """The tools offered to the model in a chat with ``assistant`` (None: rheo itself), in
    the order MCP clients list them: name, description and input schema exactly as
    ``rheo mcp`` lists them (``write_memory`` with ``scope`` only for an assistant)."""
    return [
        ToolSpec(name=t.name, description=t.describe(assistant), input_schema=t.schema(assistant))
        for t in offered("chat")
    ]


def run_tool(rt: App, call: ToolCall, turn: ledger.Turn) -> ToolOutput:
    """Run one tool call the model made while answering ``turn`` (the person's stored turn).
    Never raises: a refusal or failure is a one-line ``ToolOutput`` with ``is_error``."""
    return actions.call(rt, Caller.chat(turn), call.name, call.input)


def make_assistant(
    rt: App, *, on_tool: Callable[[str, ToolOutput], None] | None = None
) -> Assistant:
    """An Assistant for ``rt`` with the chat's memory tools (`wiring.make_assistant`: an
    extraction job after each reply, a digest job when a session closes). ``on_tool(name,
    output)`` hears of each tool call the model made, once it ran."""

    def run(call: ToolCall, turn: ledger.Turn) -> ToolOutput:
        output = run_tool(rt, call, turn)
        if on_tool is not None:
            on_tool(call.name, output)
        return output

    return wiring.make_assistant(rt, tools=specs(rt.assistant_name), run_tool=run)
