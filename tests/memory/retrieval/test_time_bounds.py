"""Time expressions with numbers past what a date can hold (``in 99999999 weeks``, ``100000
years ago``): never an exception — no date for a deadline, no range for retrieval."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st

from rheo_cli.memory.retrieval import timeexpr

NOW = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
NUMBERS = st.one_of(
    st.integers(min_value=0, max_value=10**6),
    st.integers(min_value=0, max_value=10**40),
    st.sampled_from([7980, 99_999_999, 10**20, 2**63, 10**4000]),
)
UNITS = st.sampled_from(["day", "days", "week", "weeks", "month", "months", "year", "years"])
ZONES = st.sampled_from([UTC, timezone(timedelta(hours=-11)), timezone(timedelta(hours=14))])


@settings(max_examples=300, deadline=None)
@given(n=NUMBERS, unit=UNITS, tz=ZONES)
def test_a_deadline_of_any_number_of_units_is_a_date_or_none(n, unit, tz):
    now = NOW.astimezone(tz)
    for words in (f"in {n} {unit}", f"{n} {unit} from now"):
        day = timeexpr.future_date(words, now)
        assert day is None or (day >= now.replace(hour=0, minute=0) and day.tzinfo == tz)


@settings(max_examples=300, deadline=None)
@given(n=NUMBERS, unit=UNITS, tz=ZONES)
def test_a_question_about_any_number_of_units_ago_never_breaks(n, unit, tz):
    found = timeexpr.resolve(f"what did I say {n} {unit} ago about the roof?", NOW.astimezone(tz))
    assert all(r.start < r.end for r in found)


def test_the_reported_cases_are_no_date_and_near_ones_still_are():
    assert timeexpr.future_date("in 99999999 weeks", NOW) is None
    assert timeexpr.future_date("in 100000 years", NOW) is None
    assert timeexpr.future_date("in 99999999999999999999 days", NOW) is None
    assert timeexpr.future_date("in 2 weeks", NOW) == datetime(2026, 5, 15, tzinfo=UTC)
    assert timeexpr.resolve("99999999 weeks ago", NOW) == []
    assert [r.start.date().isoformat() for r in timeexpr.resolve("2 weeks ago", NOW)] == [
        "2026-04-13"
    ]
