"""One line per memory item, the same in CLI listings and the REPL."""

from __future__ import annotations

from typing import Any

from .output import local, preview


def item_line(item: Any, now: Any, settings: Any) -> str:
    """One line per item for listings."""
    flags = []
    if item.pinned:
        flags.append("pinned")
    if item.status != "active":
        flags.append(item.status)
    if item.conflict_with:
        flags.append(f"conflicts with #{item.conflict_with}")
    extra = f"  [{', '.join(flags)}]" if flags else ""
    day = local(item.reinforced_at, now, with_time=False)
    return (
        f"#{item.id:<5} {item.category:<11} {item.effective(now, settings):.2f}  "
        f"{day}  {preview(item.content_text(), 70)}{extra}"
    )
