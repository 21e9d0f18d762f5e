"""rheo's clock: ``RHEO_NOW`` (ISO 8601) when set, else the system clock, in local time.

``RHEO_NOW`` replays dated history (imports, benchmarks) and pins time in tests. A value with
an offset keeps it (that offset is then the person's time zone in prompts) unless the machine's
zone (``TZ`` or /etc/localtime) has the same offset then; one without an offset is read in the
machine's zone, daylight-saving rules included.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, tzinfo

from .errors import UsageError
from .memory.store.errors import InvalidInput
from .memory.store.timeutil import local_zone, parse_instant

Clock = Callable[[], datetime]


def system_zone(environ: dict[str, str] | None = None) -> tzinfo:
    """The machine's time zone with its daylight-saving rules (``TZ`` or /etc/localtime), so
    that an old turn is shown at the offset it had then; a fixed offset if neither reads."""
    env = os.environ if environ is None else environ
    try:
        from zoneinfo import ZoneInfo

        key = env.get("TZ", "").lstrip(":").strip()
        if key:
            return ZoneInfo(key)
        with open("/etc/localtime", "rb") as handle:
            return ZoneInfo.from_file(handle, key="localtime")
    except Exception:  # noqa: BLE001 - any failure falls back to today's fixed offset
        return local_zone()


def from_env(environ: dict[str, str] | None = None) -> Clock:
    """A clock function returning aware datetimes in the person's zone; raises UsageError for
    a bad ``RHEO_NOW``.

    The zone is the machine's (`system_zone`, with its daylight-saving rules). ``RHEO_NOW``
    without an offset is read in it; one with an offset keeps that offset as the person's zone,
    unless the machine's zone has that very offset at that instant: then the machine's zone is
    kept, so that turns from before a daylight-saving change show at the offset they had.
    """
    env = os.environ if environ is None else environ
    zone = system_zone(dict(env))
    raw = env.get("RHEO_NOW", "").strip()
    if not raw:
        return lambda: datetime.now(zone)
    try:
        fixed = parse_instant(raw, default_tz=zone)
        if fixed.tzinfo is not zone and zone.utcoffset(fixed) == fixed.utcoffset():
            fixed = fixed.astimezone(zone)
    except InvalidInput as exc:
        raise UsageError(f"RHEO_NOW: {exc}") from None
    except (OverflowError, ValueError) as exc:
        raise UsageError(f"RHEO_NOW: {exc}") from None
    return lambda: fixed
