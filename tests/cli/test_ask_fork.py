"""``rheo ask --fork N``: a new session whose context starts with session N's turns."""

from __future__ import annotations

import json

from helpers import db_rows


def current_session(fake_model) -> str:
    """The CURRENT SESSION block of the last request's message ('' when none)."""
    sent = fake_model.last.messages[-1]["content"][-1]["text"]
    if "=== CURRENT SESSION ===" not in sent:
        return ""
    return sent.split("=== CURRENT SESSION ===", 1)[1].split("\n---\n", 1)[0]


def test_a_fork_starts_from_the_origins_turns_in_a_new_session(rheo, fake_model, home):
    fake_model.add("Nice name.", "Let us look.", "Mia.", "Yes.")
    assert rheo("ask", "my cat is called Mia").exit_code == 0
    assert rheo("ask", "--new", "about my taxes").exit_code == 0
    result = rheo("ask", "--json", "--fork", "s1", "what is her name?")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["session_number"] == 3
    block = current_session(fake_model)
    assert "my cat is called Mia" in block and "Nice name." in block
    assert "taxes" not in block
    assert rheo("ask", "-c", "is she well?").exit_code == 0
    assert "my cat is called Mia" in current_session(fake_model)  # still the fork's start
    meta = db_rows(home, "SELECT meta FROM turns WHERE content = 'what is her name?'")[0][0]
    origin = db_rows(home, "SELECT session_id FROM turns WHERE content = 'my cat is called Mia'")
    assert json.loads(meta) == {"fork_of": origin[0][0]}


def test_fork_refuses_what_cannot_be_forked_in_one_line(rheo, fake_model, home):
    fake_model.add("ok")
    assert rheo("ask", "hello").exit_code == 0
    for args, says in (
        (["--fork", "s9"], "no session"),
        (["--fork", "x"], "is not a session number"),
        (["--fork", "1", "--new"], "use only one of"),
        (["--fork", "1", "--incognito"], "without --incognito"),
    ):
        result = rheo("ask", *args, "hi")
        assert result.exit_code == 2, (args, result.stderr)
        assert says in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
    assert len(fake_model.requests) == 1
    assert db_rows(home, "SELECT count(*) FROM turns")[0][0] == 2
