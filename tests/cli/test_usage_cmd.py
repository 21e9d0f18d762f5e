"""``rheo usage``: token totals and cost from the usage stored with each reply."""

from __future__ import annotations

import json

from fakeprovider import Canned

from rheo_cli.providers.base import Usage

SONNET = Usage(input_tokens=1000, output_tokens=500, cache_read_tokens=2000, cache_write_tokens=100)
SONNET_COST = (1000 * 3 + 500 * 15 + 2000 * 0.30 + 100 * 3.75) / 1e6  # 0.011475


def two_replies(rheo, fake_model) -> None:
    """A priced Sonnet reply on 30 November, an unpriced one on 2 December (a new session)."""
    fake_model.add(Canned("One.", usage=SONNET), "Two.")
    first = rheo("ask", "-m", "claude-sonnet-4-5", "hello", RHEO_NOW="2026-11-30T10:00:00Z")
    assert first.exit_code == 0, first.stderr
    second = rheo("ask", "-m", "mystery-model", "again", RHEO_NOW="2026-12-02T10:00:00Z")
    assert second.exit_code == 0, second.stderr


def totals(key, replies, tokens, cost, unpriced):
    names = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    return {
        "key": key,
        "replies": replies,
        **dict(zip(names, tokens, strict=True)),
        "cost_usd": cost,
        "unpriced": unpriced,
    }


def test_json_by_day_and_since(rheo, fake_model, home):
    two_replies(rheo, fake_model)
    now = {"RHEO_NOW": "2026-12-03T10:00:00Z"}
    result = rheo("usage", "--by", "day", "--json", **now)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {
        "since": None,
        "by": "day",
        "rows": [
            totals("2026-11-30", 1, (1000, 500, 2000, 100), round(SONNET_COST, 6), 0),
            totals("2026-12-02", 1, (10, 5, 0, 0), None, 1),
        ],
        "total": totals("total", 2, (1010, 505, 2000, 100), round(SONNET_COST, 6), 1),
    }
    result = rheo("usage", "--since", "2026-12-01", "--json", **now)
    assert json.loads(result.stdout) == {
        "since": "2026-12-01T00:00:00+00:00",
        "by": None,
        "rows": [],
        "total": totals("total", 1, (10, 5, 0, 0), None, 1),
    }
    by_model = json.loads(rheo("usage", "--by", "model", "--json", **now).stdout)
    assert [r["key"] for r in by_model["rows"]] == ["claude-sonnet-4-5", "mystery-model"]
    by_session = json.loads(rheo("usage", "--by", "session", "--json", **now).stdout)
    assert [r["key"] for r in by_session["rows"]] == ["s1", "s2"]


def test_the_table_shows_a_dash_for_an_unknown_price(rheo, fake_model, home):
    two_replies(rheo, fake_model)
    result = rheo("usage", "--by", "model", RHEO_NOW="2026-12-03T10:00:00Z")
    assert result.exit_code == 0, result.stderr
    lines = [" ".join(line.split()) for line in result.stdout.splitlines()]
    assert lines == [
        "model replies input output cache read cache write cost",
        "claude-sonnet-4-5 1 1,000 500 2,000 100 $0.0115",
        "mystery-model 1 10 5 0 0 —",
        "total 2 1,010 505 2,000 100 $0.0115 +?",
        "(cost '—': 1 reply of a model without a known price)",
    ]


def test_no_replies_yet_is_a_total_of_zero(rheo, home):
    result = rheo("usage")
    assert result.exit_code == 0, result.stderr
    assert [" ".join(x.split()) for x in result.stdout.splitlines()][-1] == "total 0 0 0 0 0 —"


def test_bad_options_are_one_line_exit_2(rheo, home):
    for args, says in (
        (["--by", "week"], "--by takes day, session or model, not 'week'"),
        (["--since", "yesterday"], "--since takes a date, YYYY-MM-DD, not 'yesterday'"),
    ):
        result = rheo("usage", *args)
        assert result.exit_code == 2 and result.stderr == f"rheo: {says}\n", result.stderr
