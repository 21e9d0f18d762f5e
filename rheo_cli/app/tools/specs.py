"""rheo's memory tools as the model sees them: one definition per tool (name, description,
JSON Schema of its arguments, effect) and the one check of a call's arguments, shared by the
chat's tool loop (`chat`) and the MCP server (``rheo mcp``).

This module imports nothing of the engine (only the category and scope names), so ``rheo mcp``
lists the tools before the engine is loaded (bench/mcp_start.py).

Schema decisions, each for what a model fills in most reliably:

- **Flat arguments.** ``write_memory`` takes ``label`` and ``properties`` at the top level.
  The chat tool used the Rheo article's nested ``content: {label, properties}`` (the stored
  shape, §05); the MCP tool was flat. Flat wins: every required field is named in one
  ``required`` list, the model cannot put a string where the object belongs or the label
  beside it, and the extractor's JSON already names ``label`` at the top level. The stored
  item keeps ``content: {label, properties}``; that is storage, not the tool's shape.
- **Bounds in the schema** (``minLength``, ``maxLength``, ``minimum``, ``maximum``,
  ``enum``, ``default``): a model or client sees them before calling, and a refusal names
  the argument and the bound.
- **Dates as words** (``due``): ``friday``, ``in 2 weeks``, ``2026-12-04`` or an ISO 8601
  date-time, read by the one due-date rule (`rheo_cli.memory.due`); a model copies the
  person's words more reliably than it computes a date.
- **Nothing about ownership.** No tool takes a profile, a source turn, an assistant or a
  status: rheo takes them from the caller (`caller.Caller`). Such arguments, and any other
  the schema does not name, are ignored and the result says so.
- **``scope`` only where it means something.** In a chat with a named assistant,
  ``write_memory`` also takes ``scope`` (``shared``: about the person, the default;
  ``assistant``: about this assistant's work) — never which assistant. Elsewhere (rheo
  itself, MCP clients) the schema has no ``scope``.
- **Search defaults to facts in force.** ``memory_search`` and ``memory_list`` show active
  facts unless ``include_inactive`` asks for the replaced, evicted and done ones too (never
  the retracted ones).

Validation (`Tool.check`) is the same for every caller: the JSON Schema above read leniently
where a client may send a number as text (``"5"``), strictly otherwise, each failure one line
in the words MCP clients already show (``limit: Input should be less than or equal to 50``,
``label: Field required``). What the engine refuses beyond the schema (an empty label after
masking, a date that is no date) is a one-line `ToolInputError` or engine error, raised by the
tool itself. Nothing is stored when a call fails.

Which front end offers which tool (`offered`):

- MCP clients get every tool but ``log_turn``, which ``rheo mcp --log-turns`` adds (a client
  recording its own conversation; rheo's chat records its turns itself).
- The chat offers ``write_memory``, ``memory_search``, ``memory_list`` and ``chat_search``.
  Not ``context``: rheo has already injected it in front of the message. Not
  ``chat_recent``: CURRENT SESSION and EPISODIC MEMORY already hold the recent turns, and
  ``chat_search`` reaches further. Not ``memory_forget``: in rheo's own chat the person
  retracts ("forget that …", ``/forget ID``), rheo acts on it without a model, and no
  client asks the person before a destructive call as MCP clients do.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

from ...memory.facts.categories import CATEGORIES
from ...memory.facts.scope import SCOPES

CONTENT_MAX = 100_000
"""Longest turn a client may log, and longest message ``context`` takes (characters)."""
ID_MAX = 2**63 - 1
"""The largest id the store can hold (SQLite's INTEGER)."""


class ToolInputError(Exception):
    """Arguments a tool cannot use; the message is one line naming the argument."""


Effect = Literal["read", "add", "retract"]
Front = Literal["chat", "mcp"]


@dataclass(frozen=True)
class Tool:
    """One memory tool: ``name``; ``description`` for the model; ``properties``, the JSON
    Schema of each argument, in order; ``required`` argument names; ``assistant_only``
    arguments offered only in a chat with a named assistant (with ``assistant_note`` added
    to the description there); ``effect``: ``read`` (changes nothing), ``add`` (writes) or
    ``retract`` (takes a fact out of use); ``chat``: offered in rheo's chat;
    ``mcp``: ``always``, or ``log_turns`` (only with ``rheo mcp --log-turns``)."""

    name: str
    description: str
    properties: dict[str, dict[str, Any]]
    required: tuple[str, ...] = ()
    assistant_only: dict[str, dict[str, Any]] = field(default_factory=dict)
    assistant_note: str = ""
    effect: Effect = "read"
    chat: bool = False
    mcp: Literal["always", "log_turns"] = "always"

    def schema(self, assistant: str | None = None) -> dict[str, Any]:
        """The JSON Schema of the arguments for a caller talking to ``assistant`` (None:
        rheo itself, or an MCP client): ``{"type": "object", "properties": {...},
        "required": [...]}`` (``required`` left out when empty)."""
        properties = dict(self.properties)
        if assistant is not None:
            properties.update(self.assistant_only)
        out: dict[str, Any] = {"type": "object", "properties": properties}
        if self.required:
            out["required"] = list(self.required)
        return out

    def describe(self, assistant: str | None = None) -> str:
        """The description for a caller talking to ``assistant`` (see `schema`)."""
        if assistant is not None and self.assistant_note:
            return f"{self.description} {self.assistant_note}"
        return self.description

    def check(
        self, arguments: Any, assistant: str | None = None
    ) -> tuple[dict[str, Any], list[str]]:
        """Read a call's ``arguments`` against `schema` (``assistant`` as there).

        Returns ``(values, ignored)``: a value for every argument of the schema (its
        ``default``, else None, when absent or null) and the names of the arguments the
        schema does not have, in the order given. A required argument given as null is
        refused as of the wrong type. Raises ToolInputError with every failure on one line
        (``topic: Field required; confidence: Input should be less than or equal to 1``)."""
        if not isinstance(arguments, dict):
            raise ToolInputError("arguments: Input should be a valid object")
        schema = self.schema(assistant)
        values: dict[str, Any] = {}
        errors: list[str] = []
        for name, prop in schema["properties"].items():
            raw = arguments.get(name)
            if raw is None:
                if name in self.required:
                    # absent, or given as null (a client that could not convert the value)
                    kind = prop.get("type")
                    wanted = f"Input should be a valid {kind}" if name in arguments else ""
                    errors.append(f"{name}: {wanted or 'Field required'}")
                values[name] = prop.get("default")
                continue
            try:
                values[name] = _read(prop, raw)
            except _Refused as exc:
                errors.append(f"{name}: {exc}")
        if errors:
            raise ToolInputError("; ".join(errors))
        ignored = [str(k) for k in arguments if k not in schema["properties"]]
        return values, ignored


class _Refused(Exception):
    """One argument's failure, in pydantic's words (what MCP clients showed before)."""


_TRUE = {"true", "t", "yes", "y", "on", "1"}
_FALSE = {"false", "f", "no", "n", "off", "0"}


def _read(prop: dict[str, Any], raw: Any) -> Any:
    """``raw`` as the type ``prop`` names, within its bounds; raises _Refused."""
    kind = prop.get("type")
    value: Any
    if kind == "string":
        if not isinstance(raw, str):
            raise _Refused("Input should be a valid string")
        value = raw
        low, high = prop.get("minLength"), prop.get("maxLength")
        if low is not None and len(value) < low:
            unit = "character" if low == 1 else "characters"
            raise _Refused(f"String should have at least {low} {unit}")
        if high is not None and len(value) > high:
            raise _Refused(f"String should have at most {high} characters")
        if "enum" in prop and value not in prop["enum"]:
            choices = [f"'{c}'" for c in prop["enum"]]
            raise _Refused(f"Input should be {', '.join(choices[:-1])} or {choices[-1]}")
        return value
    if kind == "integer":
        value = _integer(raw)
    elif kind == "number":
        value = _number(raw)
    elif kind == "boolean":
        if isinstance(raw, bool):
            return raw
        word = str(raw).strip().casefold() if isinstance(raw, str | int) else None
        if word in _TRUE or word in _FALSE:
            return word in _TRUE
        raise _Refused("Input should be a valid boolean")
    elif kind == "object":
        if not isinstance(raw, dict):
            raise _Refused("Input should be a valid object")
        return raw
    else:  # pragma: no cover - every property names one of the types above
        raise _Refused(f"unknown type {kind!r}")
    low, high = prop.get("minimum"), prop.get("maximum")
    if low is not None and value < low:
        raise _Refused(f"Input should be greater than or equal to {low}")
    if high is not None and value > high:
        raise _Refused(f"Input should be less than or equal to {high}")
    return value


def _integer(raw: Any) -> int:
    """An integer from an integer, a whole float or a string of digits."""
    if isinstance(raw, bool):
        raise _Refused("Input should be a valid integer")
    if isinstance(raw, int):
        return raw
    if isinstance(raw, float):
        if not math.isfinite(raw):
            raise _Refused("Input should be a finite number")
        if not raw.is_integer():
            raise _Refused("Input should be a valid integer, got a number with a fractional part")
        return int(raw)
    if isinstance(raw, str):
        text = raw.strip()
        if text.lstrip("+-").isdigit() and text.isascii() and len(text) <= 30:
            return int(text)
        raise _Refused("Input should be a valid integer, unable to parse string as an integer")
    raise _Refused("Input should be a valid integer")


def _number(raw: Any) -> float:
    """A finite number from a number or its text."""
    if isinstance(raw, bool):
        raise _Refused("Input should be a valid number")
    if isinstance(raw, int | float):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(raw.strip())
        except ValueError:
            raise _Refused(
                "Input should be a valid number, unable to parse string as a number"
            ) from None
    else:
        raise _Refused("Input should be a valid number")
    if not math.isfinite(value):
        raise _Refused("Input should be a finite number")
    return value


def _text(description: str, *, low: int | None = None, high: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string"}
    if low is not None:
        out["minLength"] = low
    if high is not None:
        out["maxLength"] = high
    if description:
        out["description"] = description
    return out


def _count(description: str, *, low: int, high: int, default: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "integer", "minimum": low, "maximum": high}
    if default is not None:
        out["default"] = default
    if description:
        out["description"] = description
    return out


_INACTIVE = {
    "type": "boolean",
    "default": False,
    "description": "Also facts no longer in force: replaced, evicted and done ones.",
}

TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        Tool(
            name="write_memory",
            description=(
                "Store a durable fact about the person so rheo remembers it in later "
                "conversations: a preference, a person in their life, a project detail, a "
                "goal, a deadline, a decision, or a commitment they made (category open_item, "
                "with due when it has a deadline). Write it in the person's language. The "
                "same fact again reinforces it; a different fact on the same topic supersedes "
                "the old one, which stays in the history."
            ),
            properties={
                "category": {
                    "type": "string",
                    "enum": list(CATEGORIES),
                    "description": "What kind of fact this is (open_item: a commitment).",
                },
                "topic": _text(
                    "Short key, 1-4 words ('arowyn school'); a later fact on the same topic "
                    "replaces this one.",
                    low=1,
                    high=200,
                ),
                "label": _text("The fact, one sentence.", low=1, high=500),
                "properties": {"type": "object", "description": "Details as key/values."},
                "confidence": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1,
                    "description": "How sure the fact is, 0 to 1 (default 0.8).",
                },
                "reason": _text("Why it is worth remembering.", high=500),
                "due": _text(
                    "Deadline of an open item: a day ('friday', 'in 2 weeks', 'YYYY-MM-DD') "
                    "or an ISO 8601 date-time."
                ),
            },
            required=("category", "topic", "label"),
            assistant_only={
                "scope": {
                    "type": "string",
                    "enum": list(SCOPES),
                    "default": SCOPES[0],
                    "description": (
                        "shared: about the person or their company, for every assistant (the "
                        "default); assistant: only about how you, this assistant, should do "
                        "your work for them."
                    ),
                }
            },
            assistant_note="Say scope assistant for a fact only about your own work with them.",
            effect="add",
            chat=True,
        ),
        Tool(
            name="memory_search",
            description="Search the stored facts about the person by words; best matches first.",
            properties={
                "query": _text("Words to look for.", low=1, high=2000),
                "include_inactive": _INACTIVE,
                "limit": _count("", low=1, high=100, default=10),
            },
            required=("query",),
            chat=True,
        ),
        Tool(
            name="memory_list",
            description=(
                "List the stored facts about the person, most confident first (with "
                "include_inactive: newest first)."
            ),
            properties={
                "category": {
                    "type": "string",
                    "enum": list(CATEGORIES),
                    "description": "Only this category.",
                },
                "include_inactive": _INACTIVE,
                "limit": _count("", low=1, high=500, default=50),
            },
            chat=True,
        ),
        Tool(
            name="memory_forget",
            description=(
                "Forget a stored fact (when the person says it is wrong or asks to forget "
                "it): it is no longer used or learnt again; its history is kept."
            ),
            properties={"id": _count("The memory's #id.", low=1, high=ID_MAX, default=None)},
            required=("id",),
            effect="retract",
        ),
        Tool(
            name="chat_search",
            description=(
                "Search every earlier conversation turn with the person (in rheo and the "
                "history it imported) by keywords; dated turns, best matches first."
            ),
            properties={
                "query": _text("Keywords to look for.", low=1, high=2000),
                "limit": _count("", low=1, high=50, default=8),
            },
            required=("query",),
            chat=True,
        ),
        Tool(
            name="chat_recent",
            description="The most recent conversation turns with the person, oldest first.",
            properties={"limit": _count("", low=1, high=200, default=20)},
        ),
        Tool(
            name="context",
            description=(
                "What rheo knows that is relevant to MESSAGE, as rheo itself would inject it "
                "(current time, open items, facts, earlier conversations). Call it first, "
                "with the person's message. Nothing is stored."
            ),
            properties={
                "message": _text("The person's message.", low=1, high=CONTENT_MAX),
                "budget": _count(
                    "Token budget of the context (default: rheo's setting).",
                    low=0,
                    high=200_000,
                    default=None,
                ),
            },
            required=("message",),
        ),
        Tool(
            name="log_turn",
            description=(
                "Record one turn of this conversation in rheo's history: call it with the "
                "person's message (role user) and with your reply (role assistant), so rheo "
                "can remember and search it later."
            ),
            properties={
                "role": {"type": "string", "enum": ["user", "assistant"]},
                "content": _text("", low=1, high=CONTENT_MAX),
                "model": _text("The model that wrote a reply.", high=100),
                "reply_to": _count(
                    "With role assistant: the turn id the person's message was stored as (its "
                    "log_turn said so). Without it, the reply answers this conversation's last "
                    "message.",
                    low=1,
                    high=ID_MAX,
                    default=None,
                ),
            },
            required=("role", "content"),
            effect="add",
            mcp="log_turns",
        ),
    )
}
"""Every memory tool, in the order clients list them."""


def offered(front: Front, *, log_turns: bool = False) -> list[Tool]:
    """The tools ``front`` offers, in `TOOLS` order: the chat's (``chat``) or an MCP
    server's (``mcp``; with ``log_turns``, ``log_turn`` too). See the module docstring for
    why the chat offers fewer."""
    if front == "chat":
        return [t for t in TOOLS.values() if t.chat]
    return [t for t in TOOLS.values() if t.mcp == "always" or log_turns]
