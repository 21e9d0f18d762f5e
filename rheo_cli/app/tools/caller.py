"""Who calls rheo's memory tools, as rheo established it (never from a tool's input): the
model in rheo's own chat, answering a stored turn of the person, or an MCP client. Light:
the MCP server names its caller before the engine is loaded."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ...memory.facts.scope import assistant_in

if TYPE_CHECKING:
    from ...memory.ledger.turns import Turn


class ClientConversation:
    """One MCP client connection's conversation (``rheo mcp --log-turns``): an identity of
    its own and the message it logged last that still awaits a reply.

    Each ``rheo mcp`` process serves one client over stdio, so each process (each
    connection) is one conversation. A reply is paired with *this* conversation's waiting
    message, never with whatever turn the profile stored last: two clients logging at once
    (two Claude Code windows on one profile) each keep their own pairs.
    """

    def __init__(self) -> None:
        self.id = secrets.token_hex(6)
        self.waiting: int | None = None
        """The id of the last message (role user) this conversation logged without a reply."""


@dataclass(frozen=True)
class Caller:
    """Who calls a tool.

    ``front``: ``chat`` (the model in rheo's tool loop) or ``mcp`` (a client of ``rheo
    mcp``). ``client``: an MCP client's name and version from its ``initialize``
    (``clientInfo``); empty in chat. ``turn`` (chat): the person's stored turn the model is
    answering — what the tools write cites it, and its profile and assistant are the
    caller's. ``conversation`` (MCP with ``--log-turns``): the connection's conversation.
    """

    front: Literal["chat", "mcp"]
    client: str = ""
    turn: Turn | None = None
    conversation: ClientConversation | None = None

    @classmethod
    def chat(cls, turn: Turn) -> Caller:
        """The chat's model answering the person's stored ``turn``."""
        return cls("chat", turn=turn)

    @classmethod
    def named(
        cls,
        name: str | None,
        version: str | None = None,
        conversation: ClientConversation | None = None,
    ) -> Caller:
        """An MCP client from clientInfo's name and version (``unknown client`` when
        absent), one line, at most 80 + 20 characters."""
        text = " ".join((name or "").split())[:80] or "unknown client"
        if version and version.strip():
            text += f" {' '.join(version.split())[:20]}"
        return cls("mcp", client=text, conversation=conversation)

    @property
    def assistant(self) -> str | None:
        """The assistant the caller's conversation is with (the chat turn's; None: rheo
        itself, and every MCP client): the memory scope it reads and writes."""
        return assistant_in(self.turn.meta) if self.turn is not None else None
