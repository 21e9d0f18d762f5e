"""The MCP server itself: rheo's memory tools behind the official ``mcp`` SDK (v2,
``MCPServer``) over stdio. Imported only by ``rheo mcp``; the SDK is an optional extra
(the ``mcp`` extra).

Tool arguments are checked by the SDK against each tool's schema (a wrong type or a missing
field is a tool error before any code runs); what rheo refuses beyond that (an unknown id, an
empty label, a bad date) is a tool error with rheo's one-line reason. Both read the same way:
one line naming the argument and what is wrong (never the SDK's validation dump, its
``Error executing tool`` prefix or a documentation URL). Nothing is stored when a tool fails.

Decisions over the SDK's defaults (checked with the MCP Inspector CLI 2.12 and Claude Code):

- No ``outputSchema``: the tools return text for the model. With the SDK's generated
  ``{"result": string}`` schema, Claude Code hands the model the JSON wrapper instead of the
  text, and some clients have rejected such schemas.
- Tool descriptions are the docstrings dedented (the SDK keeps their indentation).
- An unknown prompt is ``-32602`` (invalid params), not the SDK's code 0; its log is one
  line on stderr, never a boxed traceback (`_one_line_logging`).
- `transport.serve_stdio` answers a line that is not JSON with ``-32700`` and a request
  holding a lone surrogate with ``-32602`` (the SDK drops both without an answer).

The store is opened on the first tool call, not at start, so ``initialize`` is answered as
soon as the SDK is imported (bench/mcp_start.py).
"""

# No ``from __future__ import annotations``: the SDK reads the tool functions' annotations
# (Field bounds, Literal choices, the Context parameter) at registration.

import contextlib
import inspect
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, ToolAnnotations
from pydantic import Field, ValidationError

from ..app.tools.caller import CONTENT_MAX, Caller
from ..errors import RheoError
from ..memory.facts.categories import CATEGORIES
from ..memory.store.errors import EngineError
from ..runtime import Runtime

if TYPE_CHECKING:
    from types import ModuleType


def _actions() -> "ModuleType":
    """The tools' code (the memory engine), imported on the first tool call, not before
    ``initialize`` is answered."""
    from ..app.tools import actions

    return actions


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

Category = Literal[CATEGORIES]  # type: ignore[valid-type]

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
ADD = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
RETRACT = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=False, open_world_hint=False
)


def _caller(ctx: Context, cache: dict[str, Caller]) -> Caller:
    """The client named in this connection's ``initialize`` (clientInfo), remembered."""
    if "caller" not in cache:
        name = version = None
        with contextlib.suppress(Exception):
            info = ctx.session.client_params.client_info
            name, version = info.name, info.version
        cache["caller"] = Caller.named(name, version)
    return cache["caller"]


def _run(action: Callable[[], str]) -> str:
    """Run a tool's action; rheo's refusals become tool errors with their reason."""
    try:
        return action()
    except (EngineError, RheoError, _actions().ToolInputError) as exc:
        raise ToolError(str(exc)) from None


def argument_errors(exc: ValidationError) -> str:
    """The SDK's validation failure as rheo's one line: ``id: Input should be a valid
    integer; label: Field required`` (argument names and pydantic's short messages; no
    values, no URL)."""
    parts = []
    for err in exc.errors(include_url=False, include_input=False):
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "arguments") or "arguments"
        parts.append(f"{where}: {' '.join(str(err.get('msg', 'invalid')).split())}")
    return "; ".join(dict.fromkeys(parts)) or "invalid arguments"


class RheoServer(MCPServer):
    """`MCPServer` with rheo's error wording: argument errors and refusals as one line, an
    unknown prompt as ``-32602``."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(argument_errors(exc.__cause__)) from None
            cause = exc.__cause__
            text = str(cause) if isinstance(cause, ToolError) else str(exc)
            raise ToolError(" ".join(text.split())) from None

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


def _described(fn: Callable[..., Any]) -> str:
    """A tool's description: its docstring, dedented."""
    return inspect.cleandoc(fn.__doc__ or "")


def build(rt: Runtime, *, log_turns: bool = False) -> MCPServer:
    """The server for ``rt``'s profile: the memory tools (and ``log_turn`` with
    ``log_turns``), each annotated read-only or writing, with no output schema."""
    _one_line_logging()
    server: MCPServer = RheoServer(
        name="rheo",
        title="rheo memory",
        instructions=INSTRUCTIONS,
        version=VERSION,
        log_level="WARNING",
    )
    seen: dict[str, Caller] = {}

    def tool(annotations: ToolAnnotations) -> Callable[[Callable[..., Any]], Any]:
        def register(fn: Callable[..., Any]) -> Any:
            return server.tool(
                annotations=annotations, description=_described(fn), structured_output=False
            )(fn)

        return register

    @tool(ADD)
    async def write_memory(
        category: Annotated[Category, Field(description="What kind of fact this is.")],
        topic: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                description="Short key, 1-4 words ('arowyn school'); a later fact on the "
                "same topic replaces this one.",
            ),
        ],
        label: Annotated[
            str, Field(min_length=1, max_length=500, description="The fact, one sentence.")
        ],
        ctx: Context,
        properties: Annotated[
            dict[str, Any] | None, Field(description="Details as key/values.")
        ] = None,
        confidence: Annotated[float | None, Field(ge=0, le=1)] = None,
        reason: Annotated[
            str, Field(max_length=500, description="Why it is worth remembering.")
        ] = "",
        due: Annotated[
            str | None, Field(description="Deadline for an open item: YYYY-MM-DD or ISO 8601.")
        ] = None,
    ) -> str:
        """Store a durable fact about the person so rheo remembers it in later
        conversations (in any client): a preference, a person in their life, a project
        detail, a goal, a deadline, a decision, or a commitment (category open_item). The
        same fact again reinforces it; a different fact on the same topic supersedes the
        old one, which stays in the history."""
        caller = _caller(ctx, seen)
        return _run(
            lambda: _actions().write_memory(
                rt,
                caller,
                category=category,
                topic=topic,
                label=label,
                properties=properties,
                confidence=confidence,
                reason=reason,
                due=due,
            )
        )

    @tool(READ)
    async def memory_search(
        query: Annotated[str, Field(min_length=1, max_length=2000)],
        include_inactive: Annotated[
            bool, Field(description="Also replaced, evicted and done facts.")
        ] = False,
        limit: Annotated[int, Field(ge=1, le=100)] = 10,
    ) -> str:
        """Search the stored facts about the person by words; best matches first."""
        return _run(
            lambda: _actions().memory_search(
                rt, query=query, include_inactive=include_inactive, limit=limit
            )
        )

    @tool(READ)
    async def memory_list(
        category: Annotated[Category | None, Field(description="Only this category.")] = None,
        include_inactive: Annotated[
            bool, Field(description="Also replaced, evicted and done facts, newest first.")
        ] = False,
        limit: Annotated[int, Field(ge=1, le=500)] = 50,
    ) -> str:
        """List the stored facts about the person, most confident first."""
        return _run(
            lambda: _actions().memory_list(
                rt, category=category, include_inactive=include_inactive, limit=limit
            )
        )

    @tool(RETRACT)
    async def memory_forget(
        id: Annotated[int, Field(ge=1, le=2**63 - 1, description="The memory's #id.")],
        ctx: Context,
    ) -> str:
        """Forget a stored fact (when the person says it is wrong or asks to forget it):
        it is no longer used or learnt again; its history is kept."""
        caller = _caller(ctx, seen)
        return _run(lambda: _actions().memory_forget(rt, caller, item_id=id))

    @tool(READ)
    async def chat_search(
        query: Annotated[str, Field(min_length=1, max_length=2000)],
        limit: Annotated[int, Field(ge=1, le=50)] = 8,
    ) -> str:
        """Search every earlier conversation turn with the person (in rheo and the history
        it imported) by keywords; dated turns, best matches first."""
        return _run(lambda: _actions().chat_search(rt, query=query, limit=limit))

    @tool(READ)
    async def chat_recent(limit: Annotated[int, Field(ge=1, le=200)] = 20) -> str:
        """The most recent conversation turns with the person, oldest first."""
        return _run(lambda: _actions().chat_recent(rt, limit=limit))

    @tool(READ)
    async def context(
        message: Annotated[str, Field(min_length=1, max_length=100_000)],
        budget: Annotated[int | None, Field(ge=0, le=200_000)] = None,
    ) -> str:
        """What rheo knows that is relevant to MESSAGE, as rheo itself would inject it
        (current time, open items, facts, earlier conversations). Call it first, with the
        person's message. Nothing is stored."""
        return _run(lambda: _actions().context(rt, message=message, budget=budget))

    if log_turns:
        conversation = _actions().Conversation()  # one client per stdio server: its own pairs

        @tool(ADD)
        async def log_turn(
            role: Literal["user", "assistant"],
            content: Annotated[str, Field(min_length=1, max_length=CONTENT_MAX)],
            ctx: Context,
            model: Annotated[str | None, Field(max_length=100)] = None,
            reply_to: Annotated[
                int | None,
                Field(
                    ge=1,
                    le=2**63 - 1,
                    description="With role assistant: the turn id the person's message was "
                    "stored as (its log_turn said so). Without it, the reply answers this "
                    "conversation's last message.",
                ),
            ] = None,
        ) -> str:
            """Record one turn of this conversation in rheo's history: call it with the
            person's message (role user) and with your reply (role assistant), so rheo
            can remember and search it later."""
            caller = _caller(ctx, seen)
            return _run(
                lambda: _actions().log_turn(
                    rt,
                    caller,
                    conversation,
                    role=role,
                    content=content,
                    model=model,
                    reply_to=reply_to,
                )
            )

    return server


def serve(rt: Runtime, *, log_turns: bool = False) -> None:
    """Run the server on stdin/stdout until the client closes the connection."""
    import anyio

    from .transport import serve_stdio

    anyio.run(serve_stdio, build(rt, log_turns=log_turns))
