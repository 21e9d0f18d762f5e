"""``rheo ask``: one-shot questions through the real SDK against the fake Messages API."""

from __future__ import annotations

import json

from fakeprovider import Canned
from helpers import db_rows, request_text

from rheo_cli.providers.base import Usage


def test_ask_prints_only_the_reply_and_stores_both_turns(rheo, fake_model, home):
    fake_model.add(Canned("Paris is the capital.", chunks=3))
    result = rheo("ask", "What", "is", "the", "capital?")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Paris is the capital.\n"
    rows = db_rows(home, "SELECT role, content, status FROM turns ORDER BY id")
    assert [tuple(r) for r in rows] == [
        ("user", "What is the capital?", None),
        ("assistant", "Paris is the capital.", "ok"),
    ]
    request = fake_model.last
    assert fake_model.streamed[-1] is True
    assert request.model == "claude-sonnet-5-5"
    # nothing remembered yet: the message alone, no stray "---" above it
    assert request.messages[-1]["content"][-1]["text"] == "What is the capital?"


def test_ask_json_has_reply_session_turn_ids_usage(rheo, fake_model):
    fake_model.add(
        Canned(
            "hi",
            usage=Usage(
                input_tokens=42, output_tokens=7, cache_read_tokens=30, cache_write_tokens=5
            ),
        )
    )
    result = rheo("ask", "--json", "hello")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["reply"] == "hi"
    assert out["session_id"] == 1
    assert out["turn_ids"] == [1, 2]
    assert out["usage"] == {
        "input_tokens": 42,
        "output_tokens": 7,
        "cache_read_tokens": 30,
        "cache_write_tokens": 5,
    }


def test_followup_in_same_session_carries_earlier_turns(rheo, fake_model):
    fake_model.add("Noted: your cat is Miso.", "Miso.")
    assert rheo("ask", "My cat is called Miso.").exit_code == 0
    assert rheo("ask", "What is my cat called?").exit_code == 0
    sent = request_text(fake_model.last)
    assert "=== CURRENT SESSION ===" in sent
    assert "user: My cat is called Miso." in sent
    assert "assistant: Noted: your cat is Miso." in sent
