"""``rheo mcp``: serve rheo's memory to Claude Code, Claude Desktop and other MCP clients."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import UsageError
from .errors import command
from .options import Profile
from .state import runtime_for


@command
def mcp(
    log_turns: Annotated[
        bool,
        typer.Option(
            "--log-turns",
            help="Also offer a log_turn tool, so the client can record its conversation "
            "in rheo's history.",
        ),
    ] = False,
    profile: Profile = None,
) -> None:
    """Run a Model Context Protocol server on stdin/stdout for one profile.

    Tools: write_memory, memory_search, memory_list, memory_forget, chat_search,
    chat_recent and context.

    \b
    Example (add it to Claude Code):
      claude mcp add rheo -- rheo mcp --profile work
    """
    try:
        import mcp as _sdk  # noqa: F401
    except ImportError:
        from ..extras import install_hint

        raise UsageError(f"rheo mcp needs the MCP SDK: {install_hint('mcp')}") from None
    from .. import ready
    from ..mcpserver.server import serve

    with runtime_for(profile) as app:  # the store is opened on the first tool call
        ready.reached()  # configuration and profile are usable: a resident may start
        serve(app, log_turns=log_turns)
