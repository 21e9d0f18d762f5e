"""What front ends show of stored text and times, from the engine's one text-safety module
(`memory.text.safety`) and its time helpers, named here so that no front end imports the
engine.

`safe(text)`: control and invisible characters shown literally (``<U+202E>``, ``\\x1b``),
never acted on by a terminal; `json_text(value)`: JSON with those escaped; `redact(text,
literals)`: credentials replaced by ``[redacted]``; `redact_url(url)`: a URL's password
hidden; `display(stored, tz, with_time=True)`: a stored UTC instant in the person's zone
(``2026-12-04 09:30``); `to_stored(moment)` / `from_stored(text)`: the store's UTC text
form of an aware datetime and back; `plural(count, noun)`: ``1 turn``, ``2 turns``.
"""

from __future__ import annotations

from ..memory.store.timeutil import display, from_stored, local_zone, to_stored
from ..memory.text.render import plural
from ..memory.text.safety import clean, json_escape, json_text, mask, redact, redact_url, safe

__all__ = [
    "clean",
    "display",
    "from_stored",
    "json_escape",
    "json_text",
    "local_zone",
    "mask",
    "plural",
    "redact",
    "redact_url",
    "safe",
    "to_stored",
]
