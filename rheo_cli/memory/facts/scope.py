"""Shared and assistant-specific memory (Solid# article, "Shared vs. Agent-Specific Memory").

Several assistants (personas: a name, a prompt, a model) may talk to one profile. A memory
item's ``assistant`` is NULL when the fact is shared — about the person or their company, seen
by every assistant — or the name of the one assistant whose work it is about ("prefers email
over SMS for follow-ups" told to Sarah). An assistant's view is the shared facts plus its own;
on a topic it has its own active fact, the shared one is left out of its view (its own wins,
"it's more targeted"). Other assistants' facts are never in it.

Which assistant a fact belongs to is decided by rheo from the turn it was learnt in (the turn's
``meta["assistant"]``), never from what a model writes: a writer may only say ``shared`` or
``assistant`` (this conversation's assistant).
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..store.api import Connection
from ..store.errors import InvalidInput

SHARED = "shared"
ASSISTANT = "assistant"
SCOPES = (SHARED, ASSISTANT)
"""What a writer may say about a fact: about the person (shared) or this assistant's work."""

_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")


def check_assistant(name: str) -> str:
    """Return ``name`` if it is a valid assistant name, else raise InvalidInput.

    Valid: 1-40 lowercase letters, digits, ``_`` and ``-``, starting with a letter or digit.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInput(
            f"invalid assistant name {name!r}: use 1-40 lowercase letters, digits, '_', '-'"
        )
    return name


def assistant_in(meta: dict[str, Any]) -> str | None:
    """The assistant a turn's ``meta`` says the conversation was with (None: no assistant)."""
    name = meta.get("assistant") if isinstance(meta, dict) else None
    return name if isinstance(name, str) and _NAME.fullmatch(name) else None


def assistant_of_turn(conn: Connection, turn_id: int) -> str | None:
    """The assistant ledger turn ``turn_id`` was with (None when none, or no such turn)."""
    row = conn.execute("SELECT meta FROM turns WHERE id = ?", (turn_id,)).fetchone()
    if row is None or not row[0]:
        return None
    try:
        meta = json.loads(row[0])
    except ValueError:
        return None
    return assistant_in(meta)


def read_scope(value: Any) -> str | None:
    """A writer's scope word read leniently: ``"shared"`` or ``"assistant"``; None when it
    said nothing usable (an assistant's name included: rheo decides which assistant)."""
    if not isinstance(value, str):
        return None
    word = value.strip().casefold().replace("_", "-")
    if word in ("shared", "company", "global", "common", "person", "everyone", "all"):
        return SHARED
    if word in (
        "assistant",
        "agent",
        "specific",
        "assistant-specific",
        "agent-specific",
        "private",
        "own",
    ):
        return ASSISTANT
    return None


def view_clause(assistant: str | None, alias: str = "m") -> tuple[str, list[Any]]:
    """SQL condition (``AND ...``) and arguments selecting the items ``assistant`` sees among
    rows of ``memory_items`` called ``alias``: the shared ones (NULL), and with an assistant
    its own too, minus the shared ones on a topic where it has an active fact of its own."""
    if assistant is None:
        return f" AND {alias}.assistant IS NULL", []
    return (
        f" AND ({alias}.assistant = ? OR ({alias}.assistant IS NULL AND NOT EXISTS ("
        f"SELECT 1 FROM memory_items own WHERE own.profile = {alias}.profile "
        f"AND own.assistant = ? AND own.topic = {alias}.topic AND own.status = 'active')))",
        [assistant, assistant],
    )
