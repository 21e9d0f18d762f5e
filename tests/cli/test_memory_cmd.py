"""``rheo memory add`` as a new user meets it: --due makes an open item (listed by
``rheo items``), a contradicting category is refused in one line."""

from __future__ import annotations

import json

NOW = "2026-11-30T10:00:00+00:00"


def test_due_alone_makes_an_open_item_listed_by_items(rheo, monkeypatch):
    monkeypatch.setenv("RHEO_NOW", NOW)
    added = rheo("memory", "add", "Send invoice to Acme", "-t", "acme.invoice", "--due", "friday")
    assert added.exit_code == 0, added.stderr
    assert "due Fri 4 Dec 2026" in added.stdout
    listed = json.loads(rheo("items", "list", "--json").stdout)
    assert [i["content"]["label"] for i in listed] == ["Send invoice to Acme"]
    assert listed[0]["category"] == "open_item"


def test_due_with_another_category_is_refused_in_one_line(rheo, home):
    result = rheo("memory", "add", "Send invoice", "-t", "x", "-c", "fact", "--due", "friday")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "rheo: --due is for open items, not -c fact: drop -c or use -c open_item"
    ]
    assert json.loads(rheo("memory", "list", "--json").stdout) == []


def test_a_fact_added_again_as_an_open_item_becomes_one(rheo, monkeypatch):
    monkeypatch.setenv("RHEO_NOW", NOW)
    assert rheo("memory", "add", "Send invoice to Acme", "-t", "acme.invoice").exit_code == 0
    again = rheo("memory", "add", "Send invoice to Acme", "-t", "acme.invoice", "-c", "open_item")
    assert again.exit_code == 0, again.stderr
    listed = json.loads(rheo("items", "list", "--json").stdout)
    assert [i["category"] for i in listed] == ["open_item"]
    assert "conflict" not in again.stdout.lower()


def test_repeating_a_change_is_a_no_op_with_a_note(rheo):
    assert rheo("memory", "add", "Drinks tea", "-t", "tea").exit_code == 0
    assert rheo("memory", "add", "Call Bo", "-t", "bo", "--due", "friday").exit_code == 0
    expected = {
        ("pin", "1"): "#1 already pinned: Drinks tea",
        ("unpin", "1"): "#1 not pinned: Drinks tea",
        ("forget", "1"): "#1 already forgotten: Drinks tea",
    }
    for (action, item), note in expected.items():
        first = rheo("memory", action, item)
        assert first.exit_code == 0, first.stderr
        again = rheo("memory", action, item)
        assert again.exit_code == 0, again.stderr
        assert again.stdout.strip() == note and again.stderr == ""
    assert rheo("items", "done", "2").exit_code == 0
    assert rheo("items", "done", "2").stdout.strip() == "#2 already done: Call Bo"
    assert rheo("memory", "pin", "99").exit_code == 2  # an unknown id is still an error
