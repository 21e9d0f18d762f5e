"""``rheo memory``, ``rheo items`` and ``rheo kb`` alone list, and take the list command's
options (README: "`rheo items` alone lists", "every listing command takes --json")."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize(
    "args",
    [
        ("items", "--json"),
        ("items", "--all", "--json"),
        ("memory", "--json"),
        ("memory", "--all", "--json"),
        ("memory", "--category", "fact", "--json"),
        ("kb", "--json"),
        ("kb", "--all", "--json"),
    ],
)
def test_the_bare_group_takes_the_list_options(rheo, args):
    assert (
        rheo("memory", "add", "Send invoice to Acme", "-t", "acme", "--due", "friday").exit_code
        == 0
    )
    alone = rheo(*args)
    listed = rheo(args[0], "list", *args[1:])
    assert alone.exit_code == 0, alone.stderr
    assert json.loads(alone.stdout) == json.loads(listed.stdout)


def test_the_bare_group_still_lists_and_helps(rheo):
    assert rheo("memory", "add", "Drinks tea", "-t", "tea").exit_code == 0
    assert "Drinks tea" in rheo("memory").stdout
    assert rheo("kb").exit_code == 0
    helped = rheo("items", "--help")
    assert helped.exit_code == 0 and "done" in helped.stdout and "Commands" in helped.stdout
    unknown = rheo("memory", "--bogus")
    assert unknown.exit_code == 2 and "--bogus" in unknown.stderr
