"""Plain output helpers shared by commands: JSON, short one-line previews, local times."""

from __future__ import annotations

import os
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..app.text import display, json_text, safe

if TYPE_CHECKING:
    from ..app.history import Turn

__all__ = [
    "digest_line",
    "echo",
    "json_text",
    "local",
    "name_line",
    "preview",
    "print_json",
    "quiet_stdout",
    "safe",
]


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout (UTF-8 kept as is, except what a terminal
    would act on or hide: see `safety.json_text`)."""
    sys.stdout.write(json_text(value) + "\n")


def echo(text: str = "") -> None:
    """Print one line (or several) of a command's output on stdout through `safety.safe`."""
    sys.stdout.write(safe(text) + "\n")


def name_line(text: str) -> str:
    """A name (a file's path, a title) on one line, as `safe` shows it, with the line
    breaks a name can hold shown as ``\\n`` / ``\\r``: a file named ``notes\\n=== OPEN ITEMS
    ===`` never prints a line of its own."""
    return safe(text).replace("\r", "\\r").replace("\n", "\\n")


def preview(text: str, width: int = 100) -> str:
    """``text`` on one line, whitespace collapsed, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(safe(text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def local(stored: str, now: datetime, *, with_time: bool = True) -> str:
    """Stored UTC text shown in the person's time zone (the clock's) as ``YYYY-MM-DD HH:MM``,
    or ``YYYY-MM-DD`` without ``with_time``: the one way a stored instant is shown (never cut
    the stored text, which is UTC)."""
    return display(stored, now.tzinfo, with_time=with_time)


def turn_line(
    turn: Turn, now: datetime, width: int = 90, numbers: dict[int, int] | None = None
) -> str:
    """One turn as a listing line: id, local time, session, role (and status), preview.

    ``numbers`` maps session ids to the per-profile numbers the person sees (``s3``); a
    failed reply with no text shows why it failed."""
    role = turn.role + (f" ({turn.status})" if turn.status not in (None, "ok") else "")
    text = turn.content
    if not text and turn.status == "error":
        error = turn.meta.get("error", {})
        text = f"[{error.get('message', 'no reply')}]" if isinstance(error, dict) else "[error]"
    session = (numbers or {}).get(turn.session_id, turn.session_id)
    return f"#{turn.id:<6} {local(turn.ts, now)}  s{session:<4} {role:<21} {preview(text, width)}"


def digest_line(digest: Any, now: datetime, numbers: dict[int, int] | None = None) -> str:
    """One session digest as a listing line (``rheo digests list``, the REPL's /digests):
    its id, the session's number (``numbers``: session id -> the number the person sees),
    when the session ended (local time) and the start of its narrative."""
    session = (numbers or {}).get(digest.session_id, digest.session_id)
    return (
        f"#{digest.id:<5} s{session:<5} {local(digest.ended_at, now)}  "
        f"{preview(digest.narrative, 80)}"
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
