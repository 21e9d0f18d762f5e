"""Listings fit the terminal: a header row, one line per row at 60, 80 and 200 columns,
longer previews on wider terminals, the topic in ``memory list``; ``--json`` unchanged."""

from __future__ import annotations

import json

import pytest

LONG = (
    "Ana likes green tea with a slice of lemon, never coffee after lunch, and she said so "
    "twice while we planned the trip to Lisbon in the spring with her brother"
)


@pytest.fixture
def stored(rheo):
    assert rheo("memory", "add", LONG, "-t", "ana.drink").exit_code == 0
    added = rheo("memory", "add", "Send the Acme invoice", "-t", "acme", "--due", "in 2 days")
    assert added.exit_code == 0, added.stderr
    return rheo


@pytest.mark.parametrize("width", [60, 80, 200])
def test_memory_list_fits_the_width_with_a_header_and_the_topic(stored, width):
    out = stored("memory", "list", COLUMNS=str(width)).stdout
    lines = out.splitlines()
    assert lines[0].split() == ["id", "category", "topic", "conf", "seen", "content"], out
    assert len(lines) == 3, out  # one line per memory: nothing wraps
    assert all(len(line) <= width for line in lines), out
    assert any("ana-drink" in line for line in lines), out
    row = next(line for line in lines if "Ana lik" in line)
    shown = row[row.index("Ana lik") :].rstrip("…").split()
    # every word shown whole, but the last where the cell ends in "…"
    assert shown[:-1] == LONG.split()[: len(shown) - 1], out


def test_wider_terminals_show_more_of_the_text(stored):
    narrow = stored("memory", "list", COLUMNS="80").stdout
    wide = stored("memory", "list", COLUMNS="200").stdout
    assert LONG not in narrow and "…" in narrow
    assert LONG in wide


def test_items_say_when_they_are_due_relatively(stored):
    lines = stored("items", COLUMNS="80").stdout.splitlines()
    assert lines[0].split() == ["id", "due", "item"]
    assert "(in 2 days)" in lines[1] and "Send the Acme invoice" in lines[1]


@pytest.mark.parametrize("args", [("memory", "list"), ("items", "list")])
def test_json_is_the_same_at_any_width(stored, args):
    narrow = json.loads(stored(*args, "--json", COLUMNS="60").stdout)
    wide = json.loads(stored(*args, "--json", COLUMNS="200").stdout)
    assert narrow == wide and narrow and "content" in json.dumps(narrow)
