"""Date options as people write them (``--due friday``), resolved against rheo's clock."""

from __future__ import annotations

from datetime import datetime

from ..errors import UsageError


def resolve_due(text: str, now: datetime, option: str = "--due") -> datetime:
    """The deadline ``text`` means, as an aware datetime in ``now``'s zone.

    A day ("friday", "next monday", "in 2 weeks", "2026-12-24", see `future_date`) means the
    end of that day (23:59); an ISO 8601 date-time ("2026-12-24T09:00") is kept as written.
    Raises UsageError naming ``option`` for anything else.
    """
    from ..memory.retrieval.timeexpr import future_date
    from ..memory.store.errors import InvalidInput
    from ..memory.store.timeutil import parse_instant

    words = text.strip()
    if "T" in words and words[:4].isdigit():
        try:
            return parse_instant(words, default_tz=now.tzinfo)
        except InvalidInput:
            pass
    else:
        day = future_date(words, now)
        if day is not None:
            return day.replace(hour=23, minute=59)
    raise UsageError(
        f"{option} {text!r} is not a date: try friday, next monday, in 2 weeks, 2026-12-24"
    )


def echo(moment: datetime) -> str:
    """``Fri 27 Nov 2026`` (with the time when it is not the end of the day)."""
    day = f"{moment.strftime('%a')} {moment.day} {moment.strftime('%b %Y')}"
    return day if (moment.hour, moment.minute) == (23, 59) else f"{day} {moment:%H:%M}"
