"""One line per memory item, the same in CLI listings, the REPL and Telegram."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .output import local, preview


def item_line(item: Any, now: Any, settings: Any, *, whose: bool = False) -> str:
    """One line per item for listings; ``whose`` adds a column naming the assistant the item
    is specific to (``shared`` for the others)."""
    flags = []
    if item.pinned:
        flags.append("pinned")
    if item.status != "active":
        flags.append(item.status)
    if item.conflict_with:
        flags.append(f"conflicts with #{item.conflict_with}")
    extra = f"  [{', '.join(flags)}]" if flags else ""
    day = local(item.reinforced_at, now, with_time=False)
    column = f"{item.assistant or 'shared':<12} " if whose else ""
    return (
        f"#{item.id:<5} {column}{item.category:<11} {item.effective(now, settings):.2f}  "
        f"{day}  {preview(item.content_text(), 70)}{extra}"
    )


def open_item_line(item: Any, now: datetime) -> str:
    """``#12    due 2026-12-04 OVERDUE  call Ana`` for ``items list`` and the REPL's /items."""
    from ..app.memory import is_overdue  # the engine's facts, loaded only when listing

    due = f"due {local(item.due_at, now, with_time=False)}" if item.due_at else "no due date"
    if is_overdue(item, now):
        due += " OVERDUE"
    state = "" if item.status == "active" else f"  [{item.status}]"
    return f"#{item.id:<5} {due:<22} {preview(item.content_text(), 80)}{state}"


def conflict_lines(newer: Any, older: Any, resolve: str) -> list[str]:
    """A flagged pair of contradicting facts for ``memory conflicts`` and the REPL's
    /conflicts: their topic, each one's id and content, and how to keep one (``resolve``:
    ``rheo memory resolve`` or ``/resolve``)."""
    return [
        f"topic {newer.topic}:",
        f"  newer #{newer.id}: {preview(newer.content_text(), 80)}",
        f"  older #{older.id}: {preview(older.content_text(), 80)}",
        f"  keep one with: {resolve} {newer.id}   (or {older.id})",
    ]
