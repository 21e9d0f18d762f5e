"""Stored instants said as people read them: ``today 14:05``, ``yesterday``, ``in 2 days``,
``3 days ago``; a plain date further than two weeks away."""

from __future__ import annotations

from datetime import datetime

from ..app.text import from_stored

NEAR_DAYS = 13
"""How many days away a moment is still said relatively; further ones show their date."""


def days_between(moment: datetime, now: datetime) -> int:
    """Calendar days from ``now``'s day to ``moment``'s, both in ``now``'s zone (negative:
    past)."""
    zone = now.tzinfo
    return (moment.astimezone(zone).date() - now.date()).days


def relative(stored: str, now: datetime, *, with_time: bool = False) -> str:
    """Stored UTC text relative to ``now`` (aware; its zone is the person's): ``today``,
    ``yesterday``, ``tomorrow``, ``in 3 days``, ``5 days ago`` (with ``with_time``, today's,
    yesterday's and tomorrow's moments add ``HH:MM``), else ``YYYY-MM-DD`` (``HH:MM``)."""
    moment = from_stored(stored).astimezone(now.tzinfo)
    return relative_moment(moment, now, with_time=with_time)


def relative_moment(moment: datetime, now: datetime, *, with_time: bool = False) -> str:
    """As `relative`, for an aware datetime."""
    local = moment.astimezone(now.tzinfo)
    days = days_between(local, now)
    clock = f" {local:%H:%M}" if with_time else ""
    if days == 0:
        return "today" + clock
    if days == -1:
        return "yesterday" + clock
    if days == 1:
        return "tomorrow" + clock
    if abs(days) > NEAR_DAYS:
        return f"{local:%Y-%m-%d}" + clock
    return f"in {days} days" if days > 0 else f"{-days} days ago"
