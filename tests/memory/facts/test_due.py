"""The one due-date rule (`rheo_cli.memory.due`): days are the end of that day where the
person is, date-times are kept, out-of-range and non-dates are one-line refusals; the CLI's
``--due``, the MCP tool, the extractor's parsing and the OVERDUE marks all agree with it."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rheo_cli.app.memory import is_overdue
from rheo_cli.app.tools.actions import ToolInputError
from rheo_cli.app.tools.actions import _due as mcp_due
from rheo_cli.cli.dates import resolve_due
from rheo_cli.errors import UsageError
from rheo_cli.memory import due
from rheo_cli.memory.facts.parsing import parse_facts
from rheo_cli.memory.store.errors import InvalidInput
from rheo_cli.memory.store.timeutil import to_stored

LISBON_WINTER = timezone(timedelta(hours=0))
TOKYO = timezone(timedelta(hours=9))
NOW = datetime(2026, 11, 25, 10, 0, tzinfo=TOKYO)  # a Wednesday, 01:00 UTC

EXPECTED = {
    "today": "2026-11-25T23:59",
    "tomorrow": "2026-11-26T23:59",
    "friday": "2026-11-27T23:59",
    "wednesday": "2026-11-25T23:59",  # today is one
    "next monday": "2026-11-30T23:59",
    "next wednesday": "2026-12-02T23:59",
    "in 2 weeks": "2026-12-09T23:59",
    "3 days from now": "2026-11-28T23:59",
    "next week": "2026-11-30T23:59",
    "end of month": "2026-11-30T23:59",
    "end of the week": "2026-11-29T23:59",
    "24 december": "2026-12-24T23:59",
    "Dec 24th 2027": "2027-12-24T23:59",
    "2026-12-24": "2026-12-24T23:59",
    "2026-12-24T09:00": "2026-12-24T09:00",
    "2026-12-24 09:30": "2026-12-24T09:30",
}


@pytest.mark.parametrize("text", list(EXPECTED))
def test_the_rule_reads_days_and_date_times_in_the_persons_zone(text):
    moment = due.resolve(text, NOW)
    assert moment.tzinfo == TOKYO
    assert moment.strftime("%Y-%m-%dT%H:%M") == EXPECTED[text]


def test_a_date_time_with_an_offset_keeps_it():
    moment = due.resolve("2026-12-24T09:00:00+01:00", NOW)
    assert due.stored("2026-12-24T09:00:00+01:00", NOW) == "2026-12-24T08:00:00.000Z"
    assert moment.utcoffset() == timedelta(hours=1)


@pytest.mark.parametrize(
    "text",
    ["someday", "", "soon-ish", "in 99999999 weeks", "9999-06-01", "2026-13-01", "0999-01-01"],
)
def test_what_is_no_date_or_out_of_range_is_one_line(text):
    with pytest.raises(InvalidInput) as refused:
        due.resolve(text, NOW)
    assert "\n" not in str(refused.value)


@settings(max_examples=300, deadline=None)
@given(days=st.integers(0, 3000), hours=st.integers(-12, 14))
def test_in_n_days_is_the_end_of_that_local_day(days, hours):
    zone = timezone(timedelta(hours=hours))
    now = datetime(2026, 3, 28, 22, 30, tzinfo=UTC).astimezone(zone)
    moment = due.resolve(f"in {days} days", now)
    assert moment.date() == now.date() + timedelta(days=days)
    assert (moment.hour, moment.minute) == due.END_OF_DAY and moment.utcoffset() == now.utcoffset()
    assert moment >= now.replace(hour=0, minute=0)


@settings(max_examples=300, deadline=None)
@given(day=st.dates(date(1000, 1, 2), date(9998, 12, 30)), hours=st.integers(-12, 14))
def test_an_iso_date_is_the_end_of_that_day_wherever_the_person_is(day, hours):
    zone = timezone(timedelta(hours=hours))
    now = datetime(2026, 1, 1, 12, tzinfo=zone)
    moment = due.resolve(day.isoformat(), now)
    assert moment == datetime(day.year, day.month, day.day, 23, 59, tzinfo=zone)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_any_text_is_a_deadline_or_invalid_input(text):
    try:
        to_stored(due.resolve(text, NOW))
    except InvalidInput as exc:
        assert "\n" not in str(exc)


AGREEMENT = [*EXPECTED, "2026-12-24T09:00:00+01:00"]


@pytest.mark.parametrize("text", AGREEMENT)
def test_the_cli_the_mcp_tool_and_the_extractor_agree(text):
    rule = due.stored(text, NOW)
    assert to_stored(resolve_due(text, NOW)) == rule
    assert mcp_due(SimpleNamespace(now=lambda: NOW), text) == rule  # type: ignore[arg-type]
    fact = {"category": "open_item", "topic": "t", "label": "Do it", "due": text}
    reply = json.dumps({"facts": [fact]})
    parsed = parse_facts(reply, now=NOW)
    assert parsed.facts[0].fact.due_at == rule, parsed.notes


def test_the_three_callers_refuse_the_same_text_each_in_its_own_way():
    with pytest.raises(UsageError, match="--due 'someday' is not a date"):
        resolve_due("someday", NOW)
    with pytest.raises(ToolInputError, match="due 'someday' is not a date"):
        mcp_due(SimpleNamespace(now=lambda: NOW), "someday")  # type: ignore[arg-type]
    reply = (
        '{"facts": [{"category": "open_item", "topic": "t", "label": "Do it", "due": "someday"}]}'
    )
    parsed = parse_facts(reply, now=NOW)
    assert parsed.facts[0].fact.due_at is None
    assert any("due date 'someday'" in n for n in parsed.notes)


def test_overdue_is_strictly_after_the_deadline_for_active_items_only():
    deadline = due.stored("2026-11-25T10:00", NOW)
    assert not due.is_overdue(deadline, NOW) and due.is_overdue(
        deadline, NOW + timedelta(seconds=1)
    )
    assert not due.is_overdue(None, NOW)
    item = SimpleNamespace(due_at=deadline, status="active")
    assert is_overdue(item, NOW + timedelta(minutes=1))
    item.status = "done"
    assert not is_overdue(item, NOW + timedelta(minutes=1))


def test_the_cli_and_the_context_mark_the_same_items_overdue(rheo, home, monkeypatch):
    monkeypatch.setenv("RHEO_NOW", "2026-11-25T10:00:00+09:00")
    for label, when in (("pay rent", "tomorrow"), ("send invoice", "2026-11-25T09:00")):
        assert rheo("memory", "add", label, "-t", label, "--due", when).exit_code == 0
    listed = rheo("items", "list").stdout
    labels = ("pay rent", "send invoice")
    shown = {lb: "OVERDUE" in ln for ln in listed.splitlines() for lb in labels if lb in ln}
    assert shown == {"pay rent": False, "send invoice": True}, listed
    context = rheo("context", "anything due").stdout
    lines = [ln for ln in context.splitlines() if "pay rent" in ln or "send invoice" in ln]
    assert {("send invoice" in ln) for ln in lines if "OVERDUE" in ln} == {True}, context
    assert any("pay rent" in ln and "OVERDUE" not in ln for ln in lines), context
