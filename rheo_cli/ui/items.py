"""One line per memory item, the same in CLI listings and the REPL."""

from __future__ import annotations

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
    column = f"{item.assistant or 'shared':<12} " if whose else ""
    return (
        f"#{item.id:<5} {column}{item.category:<11} {item.effective(now, settings):.2f}  "
        f"{local(item.reinforced_at, now)[:10]}  {preview(item.content_text(), 70)}{extra}"
    )
