"""Instants as rheo stores them: UTC, ISO 8601, fixed width so text order is time order.

Stored form: ``YYYY-MM-DDTHH:MM:SS.mmmZ`` (always milliseconds, always ``Z``). Every function
here takes or returns timezone-aware datetimes; naive ones are refused so that no local-time
guess leaks into the ledger.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone, tzinfo

from .errors import InvalidInput

MIN_YEAR = 1000
MAX_YEAR = 9998
"""Instants rheo accepts: four-digit years, with room for any time-zone shift."""


def check_range(moment: datetime) -> datetime:
    """``moment`` if its year is within `MIN_YEAR`..`MAX_YEAR`, else InvalidInput."""
    if not MIN_YEAR <= moment.year <= MAX_YEAR:
        raise InvalidInput(f"dates must be between the years {MIN_YEAR} and {MAX_YEAR}")
    return moment


def to_stored(moment: datetime) -> str:
    """Format an aware datetime as the stored UTC text, e.g. ``2026-11-29T21:03:00.000Z``.

    Raises InvalidInput for a naive datetime or one outside the years 1000-9998.
    """
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InvalidInput("a naive datetime cannot be stored; give it a time zone")
    utc = check_range(moment).astimezone(UTC)
    return (
        f"{utc.year:04d}-{utc.month:02d}-{utc.day:02d}T{utc.hour:02d}:{utc.minute:02d}:"
        f"{utc.second:02d}.{utc.microsecond // 1000:03d}Z"
    )


def from_stored(text: str) -> datetime:
    """Parse stored UTC text (or any ISO 8601 with an offset) into an aware UTC datetime."""
    return parse_instant(text).astimezone(UTC)


def parse_instant(text: str, *, default_tz: tzinfo | None = None) -> datetime:
    """Parse ISO 8601 text into an aware datetime, keeping its offset.

    ``Z`` is accepted for UTC. Text without an offset takes ``default_tz`` when given
    (callers pass the machine's local zone for clocks a person typed); otherwise it is refused.
    Raises InvalidInput with a one-line reason.
    """
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise InvalidInput(f"not an ISO 8601 date-time: {text!r}") from None
    if moment.tzinfo is None:
        if default_tz is None:
            raise InvalidInput(f"date-time has no UTC offset: {text!r}")
        moment = moment.replace(tzinfo=default_tz)
    return check_range(moment)


def local_zone() -> timezone:
    """The machine's current local time zone as a fixed-offset timezone."""
    local = datetime.now().astimezone()
    offset = local.utcoffset() or timedelta(0)
    name = local.tzname()
    return timezone(offset, name) if name else timezone(offset)


def display(stored: str, tz: tzinfo | None, *, with_time: bool = True) -> str:
    """Render stored UTC text in ``tz`` as ``YYYY-MM-DD HH:MM`` (or just the date); with a
    zone that has daylight-saving rules, at the offset of that moment. None: UTC."""
    moment = from_stored(stored)
    if tz is not None:
        moment = moment.astimezone(tz)
    return moment.strftime("%Y-%m-%d %H:%M" if with_time else "%Y-%m-%d")
