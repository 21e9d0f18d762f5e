"""Dates are the person's: everything shown or injected uses the local date
and time of the person's zone (``TZ``, with its daylight-saving rules, or RHEO_NOW's offset);
a due date given as a date stays that date; no code cuts a stored UTC timestamp."""

from __future__ import annotations

import ast
import io
import json
import re
from pathlib import Path

import pytest
from fakeprovider import Canned
from helpers import db_rows, kind_of, request_text, route

PACKAGE = Path(__file__).resolve().parents[2] / "rheo_cli"

ZONES = {
    "UTC+10": ("Australia/Brisbane", "2026-11-30T21:00:00+10:00"),
    "UTC-5": ("America/Bogota", "2026-11-30T21:00:00-05:00"),
}


def injected(request) -> str:
    return "".join(b["text"] for b in request.messages[0]["content"])


def chat_requests(fake_model) -> list:
    return [r for r in fake_model.requests if kind_of(r) == "chat"]


@pytest.mark.parametrize("zone", list(ZONES), ids=list(ZONES))
def test_a_due_date_given_as_a_date_stays_that_date(rheo, fake_model, monkeypatch, home, zone):
    name, now = ZONES[zone]
    monkeypatch.setenv("TZ", name)
    monkeypatch.setenv("RHEO_NOW", now)  # 21:00 local: UTC is already the next day at UTC+10
    route(
        fake_model,
        chat=[
            Canned(
                tool_calls=[
                    (
                        "write_memory",
                        {
                            "category": "open_item",
                            "topic": "acme invoice",
                            "label": "Send the Acme invoice",
                            "due": "2026-12-04",
                        },
                    )
                ]
            ),
            "Noted: the Acme invoice by Friday 4 December.",
            "ok",
        ],
    )
    assert rheo("ask", "I'll send the Acme invoice by Friday the 4th.").exit_code == 0
    listed = rheo("items", "list")
    assert "2026-12-04 (in 4 days)" in listed.stdout, listed.stdout
    item_id = json.loads(rheo("items", "list", "--json").stdout)[0]["id"]
    assert "due: 2026-12-04 23:59" in rheo("memory", "show", str(item_id)).stdout
    context = json.loads(rheo("context", "what is due?", "--json").stdout)
    items = next(s for s in context["sections"] if s["name"] == "OPEN ITEMS")
    assert "due 2026-12-04)" in items["text"]
    assert items["lines"][0]["why"] == "open commitment, due 2026-12-04"
    repl_out = run_repl("/items\r/exit\r")
    assert "due 2026-12-04" in repl_out  # the shared open-item line, as `items list`


def run_repl(keys: str) -> str:
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from rheo_cli.app import app as runtime
    from rheo_cli.repl.app import run_repl as repl

    out = io.StringIO()
    with create_pipe_input() as pipe:
        pipe.send_text(keys)
        rt = runtime.build()
        try:
            repl(rt, input=pipe, output=DummyOutput(), out=out, rendered=False)
        finally:
            rt.close()
    return out.getvalue()


def test_a_session_just_after_local_midnight_is_dated_that_day(rheo, fake_model, monkeypatch, home):
    # UTC+10: 00:10 local is 14:10 UTC the day before.
    monkeypatch.setenv("TZ", "Australia/Brisbane")
    monkeypatch.setenv("RHEO_NOW", "2026-12-03T00:10:00")
    route(fake_model, chat="Good night owl. Let's plan Thursday.")
    assert rheo("ask", "Just after midnight: let's plan Thursday's Nutrifax call.").exit_code == 0
    assert rheo("maintain").exit_code == 0
    extract = next(r for r in fake_model.requests if kind_of(r) == "extract")
    assert "Date of the exchange: Thursday 2026-12-03 00:10 +1000" in request_text(extract)
    monkeypatch.setenv("RHEO_NOW", "2026-12-03T00:20:00")
    assert "2026-12-03 00:10" in rheo("history", "recent").stdout
    row = rheo("sessions", "list").stdout.splitlines()[1].split()
    assert row[:5] == ["s1", "2026-12-03", "00:10", "today", "00:10"]
    shown = json.loads(rheo("context", "and then?", "--json").stdout)
    session = next(s for s in shown["sections"] if s["name"] == "CURRENT SESSION")
    assert "[2026-12-03 00:10] user: Just after midnight" in session["text"]
    assert "Thursday 3 December 2026, 00:20 (UTC+10:00, AEST)" in shown["system"][1]["text"]
    # Memory tools answer in local time too.
    from rheo_cli.app import app as runtime
    from rheo_cli.app.tools.chat import run_tool
    from rheo_cli.memory.ledger import turns as ledger
    from rheo_cli.providers.base import ToolCall

    rt = runtime.build()
    try:
        me = ledger.get_turn(rt.conn, rt.profile, 1)
        found = run_tool(rt, ToolCall("t1", "chat_search", {"query": "Thursday"}), me).text
        assert "#2 [2026-12-03 00:10] assistant: Good night owl" in found
        assert "UTC" not in found
    finally:
        rt.close()
    # The next day, a gap later: the previous session's end is dated that day as well.
    monkeypatch.setenv("RHEO_NOW", "2026-12-03T09:00:00")
    shown = json.loads(rheo("context", "where were we?", "--json").stdout)
    episodic = next(s for s in shown["sections"] if s["name"] == "EPISODIC MEMORY")
    assert "(2026-12-03 00:10 to 2026-12-03 00:10;" in episodic["text"]
    assert "[2026-12-03 00:10] user: Just after midnight" in episodic["text"]


@pytest.mark.parametrize("now", ["2026-03-30T10:00:00", "2026-03-30T10:00:00+02:00"])
def test_turns_from_before_a_dst_change_keep_their_own_offset(rheo, fake_model, monkeypatch, now):
    monkeypatch.setenv("TZ", "Europe/Berlin")  # CET (+01:00) until 29 March 2026, then CEST
    monkeypatch.setenv("RHEO_NOW", "2026-03-28T23:30:00")  # 22:30 UTC
    route(fake_model, chat="Noted, the Nutrifax plan for Monday.")
    assert rheo("ask", "Late Saturday: the Nutrifax plan for Monday.").exit_code == 0
    monkeypatch.setenv("RHEO_NOW", now)
    recent = rheo("history", "recent").stdout
    assert "2026-03-28 23:30" in recent and "2026-03-29 00:30" not in recent
    sent = json.loads(rheo("context", "So where were we?", "--json").stdout)
    whole = "".join(p["text"] for p in sent["messages"][0]["content"])
    assert "[2026-03-28 23:30] user: Late Saturday" in whole
    assert "Monday 30 March 2026, 10:00 (UTC+02:00, CEST)" in sent["system"][1]["text"]


def test_an_explicit_offset_unlike_the_machine_zone_is_the_persons_zone(
    rheo, fake_model, monkeypatch
):
    monkeypatch.setenv("TZ", "Europe/Berlin")
    monkeypatch.setenv("RHEO_NOW", "2026-06-01T08:00:00-05:00")
    route(fake_model, chat="ok")
    assert rheo("ask", "hello from Bogota").exit_code == 0
    assert "2026-06-01 08:00" in rheo("history", "recent").stdout
    request = chat_requests(fake_model)[-1]
    assert "Monday 1 June 2026, 08:00 (UTC-05:00)" in request.system[1].text
    assert db_rows  # (helpers imported for the other tests)


# --- No code cuts a stored timestamp -------------------------------------------------------

TIMEY = re.compile(
    r"(\bts\b|_ts\b|_at\b|\bat\b|timestamp|\bwhen\b|\bdate\b|\bday\b|"
    r"\bdisplay\(|\blocal\(|\bto_stored\(|isoformat\(|strftime\()"
)
"""Expressions that hold a stored or rendered instant."""


def timestamp_cuts(source: str) -> list[str]:
    """``x.created_at[:10]``, ``ts[:16]``, ``local(...)[:10]``, ``t.ts.split('T')[0]``...:
    slicing or splitting text that holds an instant (stored UTC, so the date is UTC's)."""
    found: dict[int, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript):
            value = ast.unparse(node.value)
            if isinstance(node.slice, ast.Slice) and TIMEY.search(value):
                found.setdefault(node.lineno, ast.unparse(node))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("split", "partition", "rpartition")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "T"
            and TIMEY.search(ast.unparse(node.func.value))
        ):
            found.setdefault(node.lineno, ast.unparse(node))
    return list(found.values())


def test_the_forbidding_rule_catches_the_usual_cuts():
    bad = (
        "a = item.due_at[:10]\nb = t.ts[:16].replace('T', ' ')\nc = local(x, now)[:10]\n"
        "d = display(d.ended_at, tz)[:10]\ne = turn.ts.split('T')[0]\nf = ts[:10]\n"
    )
    assert len(timestamp_cuts(bad)) == 6
    fine = "a = text[:10]\nb = q.phrases[:4]\nc = display(x, tz, with_time=False)\n"
    assert timestamp_cuts(fine) == []


def test_no_stored_timestamp_is_sliced_anywhere():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for cut in timestamp_cuts(path.read_text()):
            offenders.append(f"{path.relative_to(PACKAGE.parent)}: {cut}")
    assert offenders == [], "show instants with timeutil.display / ui.output.local:\n" + "\n".join(
        offenders
    )
