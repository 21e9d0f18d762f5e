"""A turn's events as JSON objects, one per line (``rheo ask --json-stream``), for any front
end or process that streams a turn to another program.

Each object has ``type``: ``delta`` (``text``: a piece of the reply), ``notice`` (``text``:
a line for the person), ``tool`` (``name``, ``summary``, ``failed``: the model used one of
rheo's memory tools; ``wrote_memory`` when it stored or forgot a memory), ``usage``
(``input_tokens``, ``output_tokens``, ``cache_read_tokens``, ``cache_write_tokens``,
``cost_usd`` when the provider priced the turn) and last ``final`` (what ``rheo ask --json``
prints: reply, session, turn ids, status...)."""

from __future__ import annotations

import json
from typing import Any

from ..memory.text.safety import json_escape
from .conversation import Event, Notice, Outcome, TextDelta, ToolActivity

MEMORY_WRITES = frozenset({"write_memory", "memory_forget"})
"""The tools whose successful call changes what rheo remembers."""


def event_json(event: Event) -> dict[str, Any]:
    """One streamed event as a JSON object (see the module's note for its fields)."""
    if isinstance(event, TextDelta):
        return {"type": "delta", "text": event.text}
    if isinstance(event, Notice):
        return {"type": "notice", "text": event.text}
    if isinstance(event, ToolActivity):
        return {
            "type": "tool",
            "name": event.name,
            "summary": event.summary,
            "failed": event.failed,
            "wrote_memory": event.name in MEMORY_WRITES and not event.failed,
        }
    raise TypeError(f"not a turn event: {event!r}")


def ending_json(outcome: Outcome) -> list[dict[str, Any]]:
    """The last two objects of a streamed turn: its ``usage`` and its ``final`` outcome."""
    usage = outcome.usage
    counts: dict[str, int | float] = {
        name: int(getattr(usage, name, 0) or 0)
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    }
    cost = getattr(usage, "cost_usd", None)
    if isinstance(cost, int | float):
        counts["cost_usd"] = round(float(cost), 6)
    return [{"type": "usage", **counts}, {"type": "final", **outcome.to_json()}]


def ndjson_line(value: dict[str, Any]) -> str:
    """``value`` as one line of NDJSON (UTF-8 kept, what a terminal would act on escaped as
    `text.json_escape` does; no line break inside), newline ended."""
    return json_escape(json.dumps(value, ensure_ascii=False, separators=(",", ":"))) + "\n"


def memory_note(event: ToolActivity) -> str | None:
    """The line telling the person the model stored or forgot a memory during the turn
    (``memory: stored #12: Ana prefers tea``); None for other tool calls."""
    if event.name not in MEMORY_WRITES or event.failed or not event.summary:
        return None
    return f"memory: {event.summary}"
