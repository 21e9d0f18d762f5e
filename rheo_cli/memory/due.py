"""The one rule for due dates: what a deadline written by a person or a model means, and
when an open item is overdue. The CLI's ``--due``, the MCP and chat ``write_memory`` tools,
the extractor's and digest writer's facts and every OVERDUE mark read dates through here.

A deadline is read in the person's time zone (that of ``now``, the clock's):

- an ISO 8601 date-time (``2026-12-24T09:00``, ``2026-12-24 09:00``, with or without an
  offset; without one it is the person's local time) is that instant;
- a day — ``2026-12-24``, ``today``, ``tonight``, ``tomorrow``, a weekday (``friday``: the
  next one, today included; ``next monday``), ``in 2 weeks``, ``3 days from now``, ``next
  week``, ``next month``, ``end of the week``, ``end of month``, ``24 december``, ``dec
  24th 2026`` (`retrieval.timeexpr.future_date`) — is the end of that day, 23:59 local.

Bounds: the instant must be one rheo can store (years `timeutil.MIN_YEAR`..`MAX_YEAR`), so
``in 99999999 weeks`` is refused like ``someday``, with one line.
"""

from __future__ import annotations

import re
from datetime import datetime

from .retrieval.timeexpr import future_date
from .store.errors import InvalidInput
from .store.timeutil import check_range, from_stored, parse_instant, to_stored

END_OF_DAY = (23, 59)
"""The hour and minute a deadline given as a day means."""

EXAMPLES = "friday, next monday, in 2 weeks, end of month, 2026-12-24"
"""What a refusal suggests."""

_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d", re.I)


def resolve(text: str, now: datetime) -> datetime:
    """The instant ``text`` means as a deadline, read against ``now`` (aware: its zone is
    the person's), as an aware datetime (in ``now``'s zone for a day, in the offset written
    for a date-time). Raises InvalidInput (one line, naming ``text``) for text that is no
    date, or a date outside the years rheo stores."""
    words = " ".join(text.split())
    try:
        if _DATE_TIME.match(words):
            return check_range(parse_instant(words, default_tz=now.tzinfo))
        day = future_date(words, now)
        if day is not None:
            return check_range(day.replace(hour=END_OF_DAY[0], minute=END_OF_DAY[1]))
    except InvalidInput as exc:
        if "between the years" in str(exc):
            raise InvalidInput(f"{text.strip()[:60]!r} is out of range: {exc}") from None
    except (OverflowError, ValueError):
        pass
    raise InvalidInput(f"{text.strip()[:60]!r} is not a date: try {EXAMPLES}")


def stored(text: str, now: datetime) -> str:
    """`resolve` as stored UTC text (``2026-12-24T22:59:00.000Z``). Raises InvalidInput."""
    return to_stored(resolve(text, now))


def is_overdue(due_at: str | None, now: datetime) -> bool:
    """True when stored ``due_at`` (None: no deadline) has passed at ``now`` (aware)."""
    return bool(due_at) and from_stored(due_at or "") < now
