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
    # Format characters (Unicode category Cf), which show nothing: the soft hyphen,
    # zero-width ones, bidi marks, overrides and isolates, the Mongolian vowel separator, word
    # joiner and invisible operators, deprecated format characters, BOM, interlinear
    # annotation, Egyptian, shorthand and musical format controls, tag characters ("ASCII
    # smuggling"). Not the prepended concatenation marks (U+0600-0605, U+06DD, U+070F...):
    # they are drawn, as signs over the digits that follow.
    "\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"
    # Blank letters and marks that show nothing either: the combining grapheme joiner,
    # Hangul fillers, Khmer inherent vowels.
    "\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0"
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff"  # lone surrogates (cannot even be encoded)
)
_SELECTOR = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
_NO_BASE = re.compile(f"[{_SELECTOR}A-Za-z\\s\\x00-\\x1f\\x7f{_INVISIBLE}]")
"""What a variation selector cannot follow and still select a form of something: it is
shown when it comes at the start or after a space, an ASCII letter, a control, an invisible
character or another selector (a variation sequence is one base and one selector, so a run
of them can only carry hidden data). One after another character (the emoji selector U+FE0F
after ☺ or a keycap digit, an ideographic one after a CJK character) is kept: it only picks
how that one is drawn."""
_FLAGS = (
    "\U0001f3f4\U000e0067\U000e0062"
    "(?:\U000e0065\U000e006e\U000e0067|\U000e0073\U000e0063\U000e0074"
    "|\U000e0077\U000e006c\U000e0073)\U000e007f"
)
"""The three flags Unicode recommends that are written with tag characters (England,
Scotland, Wales): kept whole; every other tag character is shown."""
_UNSAFE = re.compile(f"{_FLAGS}|[\\x00-\\x08\\x0b-\\x1f\\x7f{_INVISIBLE}{_SELECTOR}]")
_JSON_UNSAFE = re.compile(f"{_FLAGS}|[\\x7f{_INVISIBLE}{_SELECTOR}]")
_ASCII_UNSAFE = re.compile("[\\x00-\\x08\\x0b-\\x1f\\x7f]")
"""What `_UNSAFE` can find in ASCII text, searched for faster (most text is ASCII)."""


def _kept(match: re.Match[str], *, quote: bool = False) -> bool:
    """Whether ``match`` stays as it is: a flag sequence, or a variation selector after a
    base (in a JSON document, ``quote``, a string's opening quote is no base either)."""
    found = match.group(0)
    if len(found) > 1:
        return True
    if not ("\ufe00" <= found <= "\ufe0f" or "\U000e0100" <= found <= "\U000e01ef"):
        return False
    at = match.start()
    before = match.string[at - 1] if at else ""
    return bool(before) and not _NO_BASE.match(before) and not (quote and before == '"')


def _visible(match: re.Match[str]) -> str:
    if _kept(match):
        return match.group(0)
    code = ord(match.group(0))
    if code < 0x20:
        return chr(0x2400 + code)  # control pictures: ESC shows as ␛, NUL as ␀
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"<U+{code:04X}>"


def _json_escape(match: re.Match[str]) -> str:
    if _kept(match, quote=True):
        return match.group(0)
    code = ord(match.group(0))
    if code > 0xFFFF:  # JSON writes a character beyond the BMP as its UTF-16 surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def safe(text: str) -> str:
    """Stored or received text fit for a terminal, shown literally and never interpreted.

    C0 controls other than line feed and tab become their visible pictures (ESC is ``␛``, so
    ``ESC[2J`` shows as ``␛[2J``; an OSC 52 clipboard write or OSC 8 link is shown, not run);
    DEL is ``␡``; C1 controls, format characters (zero-width, bidi, the soft hyphen, tag
    characters...), blank fillers, line/paragraph separators, stray variation selectors and
    lone surrogates become ``<U+XXXX>`` (``<U+E0049>``). Line feeds and tabs are kept, and
    so are emoji with their selector and the three tag-sequence flags. The one display filter
    every command and REPL view uses.
    """
    return (_ASCII_UNSAFE if text.isascii() else _UNSAFE).sub(_visible, text)


def json_text(value: Any) -> str:
    """``value`` as indented JSON that a terminal shows literally.

    ``json.dumps(ensure_ascii=False)`` already escapes C0 controls (``\\u001b``) but leaves
    DEL and the characters `safe` shows as ``<U+XXXX>`` as they are; these are written as
    ``\\uXXXX`` escapes too (a pair of them beyond U+FFFF: U+E0049 is ``\\udb40\\udc49``).
    They can only occur inside JSON strings, so the document decodes to the same value.
    """
    text = json.dumps(value, ensure_ascii=False, indent=2)
    if text.isascii():  # C0 controls are already escaped: only DEL may be left
        return text.replace("\x7f", "\\u007f")
    return _JSON_UNSAFE.sub(_json_escape, text)


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
