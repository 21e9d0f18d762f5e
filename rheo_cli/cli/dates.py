"""Date options as people write them (``--due friday``), resolved against rheo's clock."""

from __future__ import annotations

from datetime import datetime

from ..errors import UsageError


def resolve_due(text: str, now: datetime, option: str = "--due") -> datetime:
    """The deadline ``text`` means, as an aware datetime in ``now``'s zone: the one rule of
    `app.memory.resolve_due` (a day is its end, 23:59; an ISO 8601 date-time is kept as
    written). Raises UsageError naming ``option`` for anything else."""
    from ..app.errors import InvalidInput
    from ..app.memory import resolve_due as resolve

    try:
        return resolve(text, now)
    except InvalidInput as exc:
        raise UsageError(f"{option} {exc}") from None


def echo(moment: datetime, now: datetime) -> str:
    """``Fri 27 Nov 2026 (in 2 days)``: the day (with the time when it is not the end of the
    day) and how far it is from ``now`` (see `ui.when.relative_moment`)."""
    from ..ui.when import relative_moment

    day = f"{moment.strftime('%a')} {moment.day} {moment.strftime('%b %Y')}"
    day = day if (moment.hour, moment.minute) == (23, 59) else f"{day} {moment:%H:%M}"
    near = relative_moment(moment, now)
    return day if near[0].isdigit() else f"{day} ({near})"
