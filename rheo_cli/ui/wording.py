"""One wording per outcome, shared by the command line and the REPL.

The person sees the same sentence for the same thing whichever way they asked: marking an item
done, an interrupted reply, a failed one, nothing to retry.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from .output import preview

CHANGED = {
    "pin": "pinned",
    "unpin": "unpinned",
    "forget": "forgotten (history kept)",
    "resolve": "kept",
    "done": "done",
}
"""What each change to a memory item made of it, as the line after ``#ID`` says."""


ALREADY = {"unpin": "not pinned", "forget": "already forgotten"}
"""How a change that was already made reads (else ``already <CHANGED>``)."""


def change_line(action: str, item: Any, *, already: bool = False) -> str:
    """``#12 done: call Ana`` (or ``#12 already done: ...``) for a change to a memory item."""
    state = CHANGED[action]
    if already:
        state = ALREADY.get(action) or f"already {state}"
    tail = " (the other version is superseded)" if action == "resolve" else ""
    return f"#{item.id} {state}: {preview(item.content_text(), 80)}{tail}"


def apply_change(
    conn: sqlite3.Connection, profile: str, action: str, item_id: int, now: datetime
) -> tuple[Any, bool]:
    """Make a change named in `CHANGED` and return ``(item, already)``: a change already made
    (done again, pinned again, unpinned when not pinned, forgotten again) changes nothing and
    is not an error (``already`` is True). Raises the engine's NotFound / InvalidInput for an
    unknown id or an impossible change."""
    from ..memory.facts import curation, items

    if action in ("done", "pin", "unpin", "forget"):
        item = items.get_item(conn, profile, item_id)
        already = {
            "done": item.status == "done",
            "pin": item.pinned and item.status == "active",
            "unpin": not item.pinned and item.status == "active",
            "forget": item.status == "retracted",
        }[action]
        if already:
            return item, True
    return curation.CHANGES[action](conn, profile, item_id, now), False


def interrupted_line(turn_id: int) -> str:
    """What is said when the person stops a reply (Ctrl-C)."""
    return f"interrupted: the partial reply is kept as turn #{turn_id}"


def failed_line(error: object) -> str:
    """What is said when the model call failed (the question is stored; --retry resends)."""
    return f"{error} (the question is kept: 'rheo ask --retry' or /retry sends it again)"


NOTHING_TO_RETRY = "nothing to retry: the last question was answered"
