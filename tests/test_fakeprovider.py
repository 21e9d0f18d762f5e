"""The in-process fake model drives a whole turn through the CLI: context in, reply stored."""

from __future__ import annotations

from fakeprovider import Canned
from helpers import db_rows

from rheo_cli.providers.base import ProviderError


def test_a_turn_through_the_fake_model_is_stored_and_sees_its_context(rheo, home, fake_model):
    fake_model.add("Noted: the Nutrifax invoice goes out Friday.", "Friday, as planned.")
    first = rheo("ask", "The Nutrifax invoice goes out Friday", RHEO_NOW="2026-03-02T10:00:00Z")
    assert first.exit_code == 0, first.stderr
    assert "Nutrifax invoice goes out Friday" in first.stdout
    second = rheo("ask", "when does it go out?", RHEO_NOW="2026-03-02T10:05:00Z")
    assert second.exit_code == 0, second.stderr
    assert "Friday, as planned." in second.stdout
    # The second request carried the first exchange as the current session.
    assert "The Nutrifax invoice goes out Friday" in fake_model.asked()[1]
    rows = db_rows(home, "SELECT role, content, status FROM turns ORDER BY id")
    assert [(r["role"], r["status"]) for r in rows] == [
        ("user", None),
        ("assistant", "ok"),
        ("user", None),
        ("assistant", "ok"),
    ]


def test_a_failing_fake_model_keeps_the_question_and_the_partial_reply(rheo, home, fake_model):
    fake_model.add(Canned("Half of an ans", error=ProviderError("server", "boom (500)")))
    result = rheo("ask", "a question")
    assert result.exit_code == 1
    assert "boom" in result.stderr
    rows = db_rows(home, "SELECT role, content, status FROM turns ORDER BY id")
    assert [(r["role"], r["content"], r["status"]) for r in rows] == [
        ("user", "a question", None),
        ("assistant", "Half of an ans", "error"),
    ]
