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
    """Print ``value`` as indented JSON on stdout (UTF-8 kept as is, except what a terminal
    would act on or hide: see `json_text`)."""
    sys.stdout.write(json_text(value) + "\n")


_INVISIBLE = (
    "\x80-\x9f"  # C1 controls (U+009B is a one-byte CSI, U+009D an OSC)
    "\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"  # zero-width, bidi, separators
    "\ufff9-\ufffb"  # interlinear annotation
    "\ud800-\udfff"  # lone surrogates (cannot even be encoded)
)
_UNSAFE = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f{_INVISIBLE}]")
_JSON_UNSAFE = re.compile(f"[\\x7f{_INVISIBLE}]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    if code < 0x20:
        return chr(0x2400 + code)  # control pictures: ESC shows as ␛, NUL as ␀
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"<U+{code:04X}>"


def safe(text: str) -> str:
    """Stored or received text fit for a terminal, shown literally and never interpreted.

    C0 controls other than line feed and tab become their visible pictures (ESC is ``␛``, so
    ``ESC[2J`` shows as ``␛[2J``; an OSC 52 clipboard write or OSC 8 link is shown, not run);
    DEL is ``␡``; C1 controls, bidirectional overrides and isolates, zero-width characters,
    line/paragraph separators and lone surrogates become ``<U+XXXX>``. Line feeds and tabs
    are kept. The one display filter every command and REPL view uses.
    """
    return _UNSAFE.sub(_visible, text)


def json_text(value: Any) -> str:
    """``value`` as indented JSON that a terminal shows literally.

    ``json.dumps(ensure_ascii=False)`` already escapes C0 controls (``\\u001b``) but leaves
    DEL, C1 controls, bidirectional and zero-width characters and lone surrogates as they are;
    these are written as ``\\uXXXX`` escapes too. They can only occur inside JSON strings,
    so the document decodes to the same value.
    """
    text = json.dumps(value, ensure_ascii=False, indent=2)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def echo(text: str = "") -> None:
    """Print one line (or several) of a command's output on stdout through `safe`."""
    sys.stdout.write(safe(text) + "\n")


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


def quiet_stdout(stream: Any = None) -> None:
    """Point ``stream`` (stdout) at /dev/null after its reader went away, so that nothing
    written later, nor the flush at exit, fails."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, (stream or sys.stdout).fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass
