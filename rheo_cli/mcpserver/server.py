"""The MCP server itself: rheo's memory tools (`rheo_cli.app.tools`, the very tools of rheo's
chat) behind the official ``mcp`` SDK (v2, ``MCPServer``) over stdio. Imported only by
``rheo mcp``; the SDK is an optional extra (the ``mcp`` extra).

The tools are not functions for the SDK to read: `RheoServer` lists each tool's schema from
`app.tools.specs` as it stands, and runs every call through `app.tools.actions.call`, which
checks the arguments against that schema. (The SDK would generate a schema of its own from a
function's signature — pydantic's titles, ``anyOf`` with null — and check calls with
pydantic; the chat's tool loop would then see another schema and other refusals.) A wrong
argument and a refusal beyond the schema (an unknown id, an empty label, a bad date) read the
same way: one line naming the argument and what is wrong (``id: Input should be a valid
integer``), as a tool error. Nothing is stored when a tool fails.

Decisions over the SDK's defaults (checked with the MCP Inspector CLI 2.12 and Claude Code):

- No ``outputSchema``: the tools return text for the model. With the SDK's generated
  ``{"result": string}`` schema, Claude Code hands the model the JSON wrapper instead of the
  text, and some clients have rejected such schemas.
- An unknown prompt is ``-32602`` (invalid params), not the SDK's code 0; its log is one
  line on stderr, never a boxed traceback (`_one_line_logging`).
- `transport.serve_stdio` answers a line that is not JSON with ``-32700`` and a request
  holding a lone surrogate with ``-32602`` (the SDK drops both without an answer).

The store is opened, and the memory engine imported, on the first tool call, not at start,
so ``initialize`` and ``tools/list`` are answered as soon as the SDK is imported
(bench/mcp_start.py).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from mcp.types import Tool as MCPTool

from ..app.app import App
from ..app.tools.caller import Caller, ClientConversation
from ..app.tools.specs import offered

try:
    from importlib.metadata import version as _dist_version

    VERSION = _dist_version("rheo-cli")
except Exception:  # noqa: BLE001 - a source checkout without metadata
    VERSION = "0"

INSTRUCTIONS = (
    "rheo is the person's long-term memory, shared with their rheo command-line assistant. "
    "At the start of a conversation call `context` with the person's first message to get "
    "what rheo knows that is relevant. Store durable facts about the person (preferences, "
    "people, projects, goals, deadlines, decisions, commitments) with `write_memory`; look "
    "further back with `memory_search` and `chat_search`."
)

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
ADD = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
RETRACT = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)


ANNOTATIONS = {"read": READ, "add": ADD, "retract": RETRACT}
"""What MCP clients are told of each `specs.Tool.effect`."""

log = logging.getLogger("rheo_cli.mcpserver")


class RheoServer(MCPServer):
    """`MCPServer` serving rheo's tool set for ``rt``'s profile (with ``log_turns``, also
    ``log_turn``; one connection, one `ClientConversation`), and an unknown prompt as
    ``-32602``."""

    def __init__(self, rt: App, *, log_turns: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rt = rt
        self.log_turns = log_turns
        self.conversation = ClientConversation() if log_turns else None
        self._caller: Caller | None = None

    async def list_tools(self) -> list[MCPTool]:
        """The tools, each with rheo's own schema and description (`app.tools.specs`), an
        annotation of its effect and no output schema."""
        return [
            MCPTool(
                name=tool.name,
                description=tool.describe(),
                input_schema=tool.schema(),
                annotations=ANNOTATIONS[tool.effect],
            )
            for tool in offered("mcp", log_turns=self.log_turns)
        ]

    def caller(self, context: Any) -> Caller:
        """The client named in this connection's ``initialize`` (clientInfo), remembered."""
        if self._caller is None:
            name = version = None
            with contextlib.suppress(Exception):
                info = context.session.client_params.client_info
                name, version = info.name, info.version
            self._caller = Caller.named(name, version, conversation=self.conversation)
        return self._caller

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Any = None
    ) -> CallToolResult:
        """Run tool ``name`` through `app.tools.actions.call` (imported on the first call:
        the memory engine); a refusal is a tool error with its one line, a crash too, logged
        on stderr in one line."""
        from ..app.tools import actions

        output = actions.call(self.rt, self.caller(context), name, arguments)
        if output.crash is not None:
            log.error("tool %s failed", name, exc_info=output.crash)
        return CallToolResult(
            content=[TextContent(type="text", text=output.text)], is_error=output.is_error
        )

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Any = None
    ) -> Any:
        if self._prompt_manager.get_prompt(name) is None:
            raise MCPError(INVALID_PARAMS, f"unknown prompt: {name}")
        return await super().get_prompt(name, arguments, context)


class _OneLine(logging.Formatter):
    """``rheo mcp: LEVEL: message`` on one line; an exception as its type and text."""

    def format(self, record: logging.LogRecord) -> str:
        text = f"rheo mcp: {record.levelname.lower()}: {record.getMessage()}"
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" ({type(exc).__name__}: {exc})"
        return " ".join(text.split())


def _one_line_logging() -> None:
    """Log to stderr in one line a record, before the SDK installs its boxed tracebacks
    (its ``logging.basicConfig`` then leaves the root logger alone)."""
    handler = logging.StreamHandler()
    handler.setFormatter(_OneLine())
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(handler)
        root.setLevel(logging.WARNING)


def build(rt: App, *, log_turns: bool = False) -> MCPServer:
    """The server for ``rt``'s profile: the memory tools of `app.tools.specs` (and
    ``log_turn`` with ``log_turns``)."""
    _one_line_logging()
    return RheoServer(
        rt,
        log_turns=log_turns,
        name="rheo",
        title="rheo memory",
        instructions=INSTRUCTIONS,
        version=VERSION,
        log_level="WARNING",
    )


def serve(rt: App, *, log_turns: bool = False) -> None:
    """Run the server on stdin/stdout until the client closes the connection."""
    import anyio

    from .transport import serve_stdio

    anyio.run(serve_stdio, build(rt, log_turns=log_turns))
