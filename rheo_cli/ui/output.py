"""Plain output helpers shared by commands: JSON, short one-line previews, local times."""

from __future__ import annotations

import json
import os
import re
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..memory.ledger.turns import Turn

from ..memory.store.timeutil import display


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON (UTF-8 kept as is) on stdout."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def safe(text: str) -> str:
    """Stored text fit for a terminal: control characters (escape sequences that could clear
    the screen or write the clipboard) shown as U+FFFD; line breaks and tabs kept."""
    return _CONTROL.sub("\ufffd", text)


def preview(text: str, width: int = 100) -> str:
    """``text`` on one line, whitespace collapsed, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(safe(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def local(stored: str, now: datetime, *, with_time: bool = True) -> str:
    """Stored UTC text shown in the person's time zone (the clock's) as ``YYYY-MM-DD HH:MM``,
    or ``YYYY-MM-DD`` without ``with_time``: the one way a stored instant is shown (never cut
    the stored text, which is UTC)."""
    return display(stored, now.tzinfo, with_time=with_time)


def turn_line(turn: Turn, now: datetime, width: int = 90) -> str:
    """One turn as a listing line: id, local time, session, role (and status), preview.

    A failed reply with no text shows why it failed."""
    role = turn.role + (f" ({turn.status})" if turn.status not in (None, "ok") else "")
    text = turn.content
    if not text and turn.status == "error":
        error = turn.meta.get("error", {})
        text = f"[{error.get('message', 'no reply')}]" if isinstance(error, dict) else "[error]"
    return (
        f"#{turn.id:<6} {local(turn.ts, now)}  s{turn.session_id:<4} {role:<21} "
        f"{preview(text, width)}"
    )


def quiet_stdout(stream: Any = None) -> None:
    """Point ``stream`` (stdout) at /dev/null after its reader went away, so that nothing
    written later, nor the flush at exit, fails."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, (stream or sys.stdout).fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
