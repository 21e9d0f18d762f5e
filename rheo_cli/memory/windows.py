"""Validity windows: when a fact holds ("I'm in Paris until Friday", "my sister visits next
week", "for the summer").

A fact may carry ``valid_from`` / ``valid_until`` (stored UTC text; None: open). The extractor
may give them; otherwise rheo reads them from the fact's own words (`infer`), in the
person's time zone (that of the ``now`` the fact was said at). A day is read as a whole day:
"until Friday" ends at the end of Friday, local time; "next week" runs from its Monday to the
end of its Sunday. Past its window a fact is kept (listed as expired, found by search) but is
no longer current: it leaves CURRENT MEMORY (`current`). An open item's window end is its due
date when it has none, so it is marked OVERDUE rather than dropped.

English, French, German and Spanish; anything not understood is no window.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from .facts.items import MemoryItem
from .retrieval.timeexpr import future_date
from .store.errors import InvalidInput
from .store.timeutil import from_stored, parse_instant, to_stored


@dataclass(frozen=True)
class Window:
    """When a fact holds: ``start`` and ``end`` (aware, in the person's zone; None: open),
    and the words it was read from."""

    start: datetime | None
    end: datetime | None
    words: str = ""

    def stored(self) -> tuple[str | None, str | None]:
        """``(valid_from, valid_until)`` as stored UTC text (None where open)."""
        return (
            to_stored(self.start) if self.start is not None else None,
            to_stored(self.end) if self.end is not None else None,
        )


_WEEKDAY_WORDS = {
    "lundi": "monday",
    "mardi": "tuesday",
    "mercredi": "wednesday",
    "jeudi": "thursday",
    "vendredi": "friday",
    "samedi": "saturday",
    "dimanche": "sunday",
    "montag": "monday",
    "dienstag": "tuesday",
    "mittwoch": "wednesday",
    "donnerstag": "thursday",
    "freitag": "friday",
    "samstag": "saturday",
    "sonntag": "sunday",
    "lunes": "monday",
    "martes": "tuesday",
    "miércoles": "wednesday",
    "miercoles": "wednesday",
    "jueves": "thursday",
    "viernes": "friday",
    "sábado": "saturday",
    "sabado": "saturday",
    "domingo": "sunday",
    "demain": "tomorrow",
    "morgen": "tomorrow",
}
"""Days named in French, German and Spanish, as `timeexpr.future_date` reads them."""

_UNTIL = (
    r"until|till|til|through|thru|up\s+to|jusqu'(?:à|a|au)|jusqu’(?:à|a|au)|bis(?:\s+zum|\s+am)?"
    r"|hasta(?:\s+el)?"
)
_SEASONS = {
    # season: (first month, last month) in the northern hemisphere
    "spring": (3, 5),
    "summer": (6, 8),
    "autumn": (9, 11),
    "fall": (9, 11),
    "winter": (12, 2),
    "printemps": (3, 5),
    "été": (6, 8),
    "ete": (6, 8),
    "automne": (9, 11),
    "hiver": (12, 2),
    "frühling": (3, 5),
    "sommer": (6, 8),
    "herbst": (9, 11),
    "primavera": (3, 5),
    "verano": (6, 8),
    "otoño": (9, 11),
    "invierno": (12, 2),
}
_SEASON_RE = "|".join(sorted(_SEASONS, key=len, reverse=True))
_UNITS = {
    "day": 1,
    "days": 1,
    "week": 7,
    "weeks": 7,
    "jour": 1,
    "jours": 1,
    "semaine": 7,
    "semaines": 7,
    "tag": 1,
    "tage": 1,
    "woche": 7,
    "wochen": 7,
    "día": 1,
    "días": 1,
    "dia": 1,
    "dias": 1,
    "semana": 7,
    "semanas": 7,
}
_NUMBER_WORDS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5}


def _day(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _end_of(day: datetime) -> datetime:
    """23:59 of ``day`` (the way a due date given as a day is read, `memory.due`)."""
    return day.replace(hour=23, minute=59, second=0, microsecond=0)


def _month_add(moment: datetime, months: int) -> datetime:
    index = moment.year * 12 + moment.month - 1 + months
    return moment.replace(year=index // 12, month=index % 12 + 1, day=1)


def _season(name: str, now: datetime) -> tuple[datetime, datetime]:
    """The coming (or current) season ``name``: its first day and the end of its last."""
    first, last = _SEASONS[name]
    today = _day(now)
    start = today.replace(month=first, day=1)
    end_year = start.year + (1 if last < first else 0)
    end = _month_add(today.replace(year=end_year, month=last, day=1), 1) - timedelta(days=1)
    if _end_of(end) < now:  # this year's is over: next year's
        start = start.replace(year=start.year + 1)
        end = _month_add(end.replace(day=1, year=end.year + 1), 1) - timedelta(days=1)
    return start, _end_of(end)


def _date_after(words: str, now: datetime) -> tuple[datetime | None, str]:
    """The day the first one to four ``words`` name looking forward (``friday``, ``3 may``,
    ``the end of the month``), and the words used; None when they name none."""
    tokens = words.split()
    for n in range(min(4, len(tokens)), 0, -1):
        phrase = " ".join(tokens[:n]).strip(",.;:!?")
        phrase = re.sub(r"^(?:the|le|la|el|der|den|dem)\s+", "", phrase)
        plain = " ".join(_WEEKDAY_WORDS.get(t, t) for t in phrase.split())
        if plain in ("end of the week", "end of week", "fin de semaine", "ende der woche"):
            plain = "end of week"
        if plain in ("end of the month", "end of month", "fin du mois", "ende des monats"):
            plain = "end of month"
        if re.fullmatch(r"(?:the\s+)?weekend", plain):
            plain = "end of week"
        day = future_date(plain, now)
        if day is not None:
            return day, phrase
    return None, ""


def infer(text: str, now: datetime) -> Window | None:
    """The validity window the words of ``text`` give a fact said at ``now`` (aware, in the
    person's zone), or None when they give none. Understood: "until / till / through DAY"
    (jusqu'à, bis, hasta) to the end of that day; "until the end of the week / month";
    "until MONTH" to the start of that month; "next week" (its Monday to Sunday), "this week",
    "this weekend", "next month", "today", "tonight", "tomorrow"; "for N days / weeks";
    "for the summer" (and the other seasons; "this summer": from its start). Raises nothing."""
    try:
        return _infer(" ".join(text.lower().replace("’", "'").split()), now)
    except (OverflowError, ValueError):
        return None


def _infer(text: str, now: datetime) -> Window | None:
    today = _day(now)
    m = re.search(rf"\b(?:{_UNTIL})\s+(.+)", text)
    if m:
        rest = m.group(1)
        month = re.match(
            r"(?:the\s+)?(january|february|march|april|may|june|july|august|september"
            r"|october|november|december)\b(?!\s+\d)",
            rest,
        )
        if month:
            day = future_date(f"1 {month.group(1)}", now)
            if day is not None:
                return Window(None, day - timedelta(minutes=1), m.group(0))
        day, used = _date_after(re.sub(r"^(?:the\s+)?end\s+of\s+", "end of ", rest), now)
        if day is not None:
            return Window(None, _end_of(day), f"{m.group(0).split()[0]} {used}")
    m = re.search(
        rf"\b(?:for|during|over|pour|pendant|über|durante)\s+(?:the\s+|l'|den\s+|el\s+)?"
        rf"({_SEASON_RE})\b",
        text,
    )
    if m:
        _, end = _season(m.group(1), now)
        return Window(None, end, m.group(0))
    m = re.search(rf"\b(?:this|next|cet|cette|diesen|dieses|este|esta)\s+({_SEASON_RE})\b", text)
    if m:
        start, end = _season(m.group(1), now)
        return Window(start if start > now else None, end, m.group(0))
    week_start = today - timedelta(days=today.weekday())
    if re.search(
        r"\bnext week\b|\bla semaine prochaine\b|\bnächste woche\b|\bnaechste woche\b"
        r"|\bla (?:próxima|proxima) semana\b|\bla semana que viene\b",
        text,
    ):
        start = week_start + timedelta(days=7)
        return Window(start, _end_of(start + timedelta(days=6)), "next week")
    if re.search(r"\bthis week\b|\bcette semaine\b|\bdiese woche\b|\besta semana\b", text):
        return Window(None, _end_of(week_start + timedelta(days=6)), "this week")
    if re.search(r"\bthis weekend\b|\bce week-end\b|\bdieses wochenende\b", text):
        saturday = week_start + timedelta(days=5)
        return Window(saturday if saturday > now else None, _end_of(saturday + timedelta(days=1)))
    if re.search(
        r"\bnext month\b|\ble mois prochain\b|\bnächsten monat\b|\bel mes que viene\b", text
    ):
        start = _month_add(today, 1)
        return Window(start, _end_of(_month_add(start, 1) - timedelta(days=1)), "next month")
    m = re.search(
        r"\b(?:for|pour|für|durante)\s+(?:the\s+next\s+)?(\d+|a|an|one|two|three|four|five)"
        r"\s+(days?|weeks?|jours?|semaines?|tage?|wochen?|d[ií]as?|semanas?)\b",
        text,
    )
    if m:
        count = int(m.group(1)) if m.group(1).isdigit() else _NUMBER_WORDS[m.group(1)]
        days = count * _UNITS[m.group(2)]
        return Window(None, _end_of(today + timedelta(days=days)), m.group(0))
    if re.search(r"\btomorrow\b|\bdemain\b|\bmorgen\b", text):
        start = today + timedelta(days=1)
        return Window(start, _end_of(start), "tomorrow")
    if re.search(
        r"\b(?:today|tonight|aujourd'hui|ce soir|heute|heute abend|hoy|esta noche)\b", text
    ):
        return Window(None, _end_of(today), "today")
    return None


def read(value: object, now: datetime, *, end: bool) -> str | None:
    """A window bound a writer gave (an ISO 8601 date or date-time, or a day in words:
    ``friday``, ``2026-12-24``) as stored UTC text, read in ``now``'s zone: a day alone is its
    start (``end`` False) or the end of it (``end`` True). None for blank. Raises InvalidInput
    for anything else."""
    text = " ".join(str(value or "").split())
    if not text:
        return None
    if re.match(r"\d{4}-\d{2}-\d{2}[T ]\d", text):
        return to_stored(parse_instant(text, default_tz=now.tzinfo))
    day = future_date(text, now)
    if day is None:
        window = infer(f"until {text}", now)
        if window is None or window.end is None:
            raise InvalidInput(f"{text[:60]!r} is not a date")
        return to_stored(window.end)
    return to_stored(_end_of(day) if end else day)


def check(valid_from: str | None, valid_until: str | None) -> None:
    """Raise InvalidInput unless both bounds are stored times (or None) in order."""
    for value in (valid_from, valid_until):
        if value is not None:
            from_stored(value)
    if valid_from and valid_until and from_stored(valid_until) < from_stored(valid_from):
        raise InvalidInput("a fact's window must end after it starts")


def current(items: Iterable[MemoryItem], now: datetime) -> list[MemoryItem]:
    """``items`` without the facts whose window ended by ``now`` (open items stay: past their
    window they are overdue, not gone)."""
    return [i for i in items if i.category == "open_item" or not i.expired(now)]
