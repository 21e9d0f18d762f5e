"""``--due`` past what rheo can store (``in 99999999 weeks``, ``in 100000 years``, year
9999): one usage line, exit 2, nothing stored."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from helpers import db_rows
from hypothesis import given, settings
from hypothesis import strategies as st

from rheo_cli.cli.dates import resolve_due
from rheo_cli.errors import UsageError
from rheo_cli.memory.store.errors import InvalidInput
from rheo_cli.memory.store.timeutil import to_stored

NOW = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


@settings(max_examples=300, deadline=None)
@given(
    n=st.one_of(st.integers(0, 10**6), st.integers(0, 10**30)),
    unit=st.sampled_from(["day", "days", "week", "weeks", "month", "months", "year", "years"]),
)
def test_any_number_of_units_is_a_deadline_or_a_usage_error(n, unit):
    try:
        moment = resolve_due(f"in {n} {unit}", NOW)
    except UsageError as exc:
        assert "\n" not in str(exc)
        return
    try:
        to_stored(moment)
    except InvalidInput as exc:  # the command reports this one as a usage line too
        assert "\n" not in str(exc)


@pytest.mark.parametrize(
    "due", ["in 99999999 weeks", "in 100000 years", "in 99999999999999999999 days", "9999-06-01"]
)
def test_memory_add_with_a_due_date_out_of_range_is_one_usage_line(rheo, home, due):
    result = rheo("memory", "add", "x", "-t", "t", "--due", due)
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("rheo: ")
    if (home / "rheo.db").exists():
        assert db_rows(home, "SELECT count(*) FROM memory_items")[0][0] == 0
