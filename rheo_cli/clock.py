"""rheo's clock: ``RHEO_NOW`` (ISO 8601) when set, else the system clock, in local time.

``RHEO_NOW`` replays dated history (imports, benchmarks) and pins time in tests. A value with
an offset keeps it (that offset is then the person's time zone in prompts); one without an
offset is read in the machine's local zone.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime

from .errors import UsageError
from .memory.errors import InvalidInput
from .memory.timeutil import local_zone, parse_instant

Clock = Callable[[], datetime]


def from_env(environ: dict[str, str] | None = None) -> Clock:
    """A clock function returning aware datetimes; raises UsageError for a bad ``RHEO_NOW``."""
    env = os.environ if environ is None else environ
    raw = env.get("RHEO_NOW", "").strip()
    if not raw:
        return lambda: datetime.now().astimezone()
    try:
        fixed = parse_instant(raw, default_tz=local_zone())
    except InvalidInput as exc:
        raise UsageError(f"RHEO_NOW: {exc}") from None
    return lambda: fixed
