"""Time expressions in a message, resolved against the clock into date ranges.

"yesterday", "last week", "last month", "in March", "two weeks ago", "on Tuesday", "in 2023",
"on 8 May", "this morning"... become ``[start, end)`` ranges in the clock's time zone, which
RELEVANT HISTORY uses to prefer turns from that time. English only; anything not understood is
simply not a time expression. No model call.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

MONTHS = {
    name: n
    for n, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        start=1,
    )
    for name in names
}
WEEKDAYS = {
    name: n
    for n, names in enumerate(
        [
            ("monday", "mon"),
            ("tuesday", "tue", "tues"),
            ("wednesday", "wed"),
            ("thursday", "thu", "thur", "thurs"),
            ("friday", "fri"),
            ("saturday", "sat"),
            ("sunday", "sun"),
        ]
    )
    for name in names
}
NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "couple": 2,
    "few": 3,
    "several": 3,
}
_MONTH_RE = "|".join(sorted(MONTHS, key=len, reverse=True))
_DAY_RE = "|".join(sorted(WEEKDAYS, key=len, reverse=True))
_NUM_RE = r"\d+|" + "|".join(NUMBERS)


@dataclass(frozen=True)
class TimeRange:
    """A resolved expression: ``[start, end)`` in the clock's zone, and the words matched."""

    start: datetime
    end: datetime
    text: str
    span: tuple[int, int] = (0, 0)
    """Where in the message the expression stands (character offsets)."""


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int, like: datetime) -> datetime:
    return like.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)


def _add_months(moment: datetime, months: int) -> datetime:
    index = moment.year * 12 + moment.month - 1 + months
    return moment.replace(year=index // 12, month=index % 12 + 1, day=1)


def _number(word: str) -> int:
    return int(word) if word.isdigit() else NUMBERS.get(word, 1)


def _ago(
    m: re.Match[str], today: datetime, add: Callable[[datetime, datetime, re.Match[str]], None]
) -> None:
    """``2 weeks ago``: a window around that day (month, year). Raises OverflowError or
    ValueError for a time before year 1."""
    n, unit = _number(m.group(1)), m.group(2)
    month_start = today.replace(day=1)
    year_start = today.replace(month=1, day=1)
    if unit == "day":
        center = today - timedelta(days=n)
        add(center - timedelta(days=1), center + timedelta(days=2), m)
    elif unit == "week":
        center = today - timedelta(weeks=n)
        add(center - timedelta(days=4), center + timedelta(days=4), m)
    elif unit == "month":
        start = _add_months(month_start, -n)
        add(start - timedelta(days=10), _add_months(start, 1) + timedelta(days=10), m)
    else:
        add(
            year_start.replace(year=year_start.year - n),
            year_start.replace(year=year_start.year - n + 1),
            m,
        )


_Add = Callable[[datetime, datetime, "re.Match[str]"], None]
"""How each rule reports a range it found: start, end (aware, end exclusive), the match."""


def resolve(message: str, now: datetime) -> list[TimeRange]:
    """Every time expression found in ``message``, resolved against ``now`` (aware)."""
    text = message.lower()
    today = _day(now)
    found: list[TimeRange] = []

    def add(start: datetime, end: datetime, match: re.Match[str]) -> None:
        found.append(TimeRange(start, end, match.group(0).strip(), match.span()))

    for rule in (_named_days, _this_and_last, _days_ago, _weekdays, _dates, _months_and_years):
        rule(text, today, add)
    return found


def _named_days(text: str, today: datetime, add: _Add) -> None:
    """Today, yesterday, the day before yesterday."""
    for m in re.finditer(r"\b(today|tonight|this (?:morning|afternoon|evening))\b", text):
        add(today, today + timedelta(days=1), m)
    for m in re.finditer(r"\b(yesterday|last night)\b", text):
        add(today - timedelta(days=1), today, m)
    for m in re.finditer(r"\bday before yesterday\b", text):
        add(today - timedelta(days=2), today - timedelta(days=1), m)


def _this_and_last(text: str, today: datetime, add: _Add) -> None:
    """This, last, past and previous week, month and year."""
    week_start = today - timedelta(days=today.weekday())
    for m in re.finditer(r"\b(this|last|past|previous) week\b", text):
        if m.group(1) == "this":
            add(week_start, week_start + timedelta(days=7), m)
        elif m.group(1) == "past":
            add(today - timedelta(days=7), today + timedelta(days=1), m)
        else:
            add(week_start - timedelta(days=7), week_start, m)
    month_start = today.replace(day=1)
    for m in re.finditer(r"\b(this|last|past|previous) month\b", text):
        if m.group(1) == "this":
            add(month_start, _add_months(month_start, 1), m)
        elif m.group(1) == "past":
            add(today - timedelta(days=31), today + timedelta(days=1), m)
        else:
            add(_add_months(month_start, -1), month_start, m)
    year_start = today.replace(month=1, day=1)
    for m in re.finditer(r"\b(this|last|past|previous) year\b", text):
        if m.group(1) == "this":
            add(year_start, year_start.replace(year=year_start.year + 1), m)
        elif m.group(1) == "past":
            add(today - timedelta(days=366), today + timedelta(days=1), m)
        else:
            add(year_start.replace(year=year_start.year - 1), year_start, m)


def _days_ago(text: str, today: datetime, add: _Add) -> None:
    """ "3 days ago", "two weeks ago"."""
    for m in re.finditer(rf"\b({_NUM_RE}) (day|week|month|year)s? ago\b", text):
        try:
            _ago(m, today, add)
        except (OverflowError, ValueError):  # before year 1: not a time rheo can hold
            continue


def _weekdays(text: str, today: datetime, add: _Add) -> None:
    """ "Tuesday", "last Tuesday", "next Friday" (bare short names too ambiguous are not)."""
    week_start = today - timedelta(days=today.weekday())
    for m in re.finditer(rf"\b(?:(last|this|on|next) )?({_DAY_RE})\b", text):
        qualifier, name = m.group(1), m.group(2)
        if name in ("sun", "sat", "wed", "mar", "may") and not qualifier:
            continue  # too ambiguous as bare words
        wanted = WEEKDAYS[name]
        if qualifier == "next":
            day = today + timedelta(days=(wanted - today.weekday()) % 7 or 7)
        elif qualifier == "this":
            day = week_start + timedelta(days=wanted)
        else:  # "last Tuesday", "on Tuesday", "Tuesday": the most recent one
            back = (today.weekday() - wanted) % 7
            if back == 0 and qualifier == "last":
                back = 7
            day = today - timedelta(days=back)
        add(day, day + timedelta(days=1), m)


def _dates(text: str, today: datetime, add: _Add) -> None:
    """ "3rd of May", "May 3, 2025": the most recent such day when no year is given."""
    for m in re.finditer(
        rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?({_MONTH_RE})\b(?:,? (\d{{4}}))?|"
        rf"\b({_MONTH_RE}) (\d{{1,2}})(?:st|nd|rd|th)?\b(?:,? (\d{{4}}))?",
        text,
    ):
        day_n = int(m.group(1) or m.group(5))
        month = MONTHS[m.group(2) or m.group(4)]
        year = int(m.group(3) or m.group(6) or today.year)
        try:
            day = today.replace(year=year, month=month, day=day_n)
        except ValueError:
            continue
        if not (m.group(3) or m.group(6)) and day > today:
            day = day.replace(year=year - 1)
        add(day, day + timedelta(days=1), m)


def _months_and_years(text: str, today: datetime, add: _Add) -> None:
    """ "in March", "since May 2024", "during 2023"."""
    for m in re.finditer(
        rf"\b(?:in|during|since|from|of|last|this) ({_MONTH_RE})\b(?: (\d{{4}}))?", text
    ):
        if m.group(1) in ("mar", "may") and not m.group(2) and "in " not in m.group(0):
            continue
        month = MONTHS[m.group(1)]
        year = int(m.group(2)) if m.group(2) else today.year
        start = _month_start(year, month, today)
        if not m.group(2) and start > today:
            start = start.replace(year=year - 1)
        since = m.group(0).startswith(("since", "from"))
        add(start, today + timedelta(days=1) if since else _add_months(start, 1), m)
    for m in re.finditer(r"\b(?:in|during|since|of) ((?:19|20)\d{2})\b", text):
        year = int(m.group(1))
        add(
            today.replace(year=year, month=1, day=1),
            today.replace(year=year + 1, month=1, day=1),
            m,
        )


_UNIT_DAYS = {"day": 1, "week": 7}


def future_date(expression: str, now: datetime) -> datetime | None:
    """The day a deadline written by a person means, looking forward from ``now`` (aware):
    midnight of that day in ``now``'s zone, or None when the words are not a date — also
    when it falls outside the years 1-9999 a date can hold (``in 99999999 weeks``). See
    `_future_date` for what is understood."""
    try:
        return _future_date(expression, now)
    except (OverflowError, ValueError):
        return None


def _future_date(expression: str, now: datetime) -> datetime | None:
    """The day a deadline written by a person means, looking forward from ``now`` (aware):
    midnight of that day in ``now``'s zone, or None when the words are not a date.

    Understood: ``2026-12-24``; ``today``, ``tonight``, ``tomorrow``; a weekday (``friday``,
    ``on fri``, ``this friday``: the next one, today included; ``next friday``: the one after
    today, as retrieval reads it); ``in 2 weeks`` / ``3 days from now`` (days, weeks, months,
    years; words or digits); ``next week`` (its Monday), ``next month`` (its first day),
    ``end of the week``/``month``; ``24 december``, ``dec 24th``, ``24 dec 2026`` (the next
    such day when no year is given).
    """
    text = " ".join(expression.lower().replace(",", " ").split())
    today = _day(now)
    iso = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", text)
    if iso:
        try:
            return today.replace(year=int(iso[1]), month=int(iso[2]), day=int(iso[3]))
        except ValueError:
            return None
    fixed = {"today": 0, "tonight": 0, "tomorrow": 1, "day after tomorrow": 2}
    if text in fixed:
        return today + timedelta(days=fixed[text])
    m = re.fullmatch(rf"(?:(on|this|next) )?({_DAY_RE})", text)
    if m:
        ahead = (WEEKDAYS[m[2]] - today.weekday()) % 7
        if m[1] == "next" and ahead == 0:
            ahead = 7
        return today + timedelta(days=ahead)
    m = re.fullmatch(
        rf"(?:in ({_NUM_RE}) (day|week|month|year)s?|({_NUM_RE}) (day|week|month|year)s? "
        r"from (?:now|today))",
        text,
    )
    if m:
        n, unit = _number(m[1] or m[3]), m[2] or m[4]
        if unit in _UNIT_DAYS:
            return today + timedelta(days=n * _UNIT_DAYS[unit])
        months = n * (12 if unit == "year" else 1)
        first = _add_months(today, months)
        last_day = (_add_months(first, 1) - timedelta(days=1)).day
        return first.replace(day=min(today.day, last_day))
    week_start = today - timedelta(days=today.weekday())
    if text == "next week":
        return week_start + timedelta(days=7)
    if text == "next month":
        return _add_months(today.replace(day=1), 1)
    if text in ("end of week", "end of the week", "this weekend", "weekend"):
        return week_start + timedelta(days=6 if "end of" in text else 5)
    if text in ("end of month", "end of the month"):
        return _add_months(today.replace(day=1), 1) - timedelta(days=1)
    m = re.fullmatch(
        rf"(?:on )?(?:(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?({_MONTH_RE})|({_MONTH_RE}) "
        rf"(\d{{1,2}})(?:st|nd|rd|th)?)(?: (\d{{4}}))?",
        text,
    )
    if m:
        day_n, month = int(m[1] or m[4]), MONTHS[m[2] or m[3]]
        try:
            day = today.replace(year=int(m[5] or today.year), month=month, day=day_n)
            if not m[5] and day < today:
                day = day.replace(year=today.year + 1)
        except ValueError:
            return None
        return day
    return None
