"""A reply cut at the model's output limit (``max_tokens``; OpenAI's finish reason ``length``;
Claude Code's ``stop_reason``) is delivered, stored as ``interrupted`` with meta stop_reason
``max_tokens``, and the person is told in one line how to raise the limit: with the
in-process fake model, and for OpenAI's and Claude Code's own words for it, through the real
SDK against the local fake server and the stand-in ``claude`` (boundary)."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeopenai import FakeOpenAI
from fakeopenai import text as oai_text
from fakeprovider import Canned
from helpers import db_rows
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from rheo_cli.app import app as runtime
from rheo_cli.repl.app import run_repl

BIN = Path(__file__).resolve().parent.parent / "bin"


def replies(home: Path) -> list[tuple[str, str, dict]]:
    """Every stored reply: (content, status, meta)."""
    return [
        (r["content"], r["status"], json.loads(r["meta"] or "{}"))
        for r in db_rows(home, "SELECT content, status, meta FROM turns WHERE role='assistant'")
    ]


def one_note(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rheo: note: "), stderr
    return lines[0]


def test_anthropic_reply_cut_at_max_tokens_is_kept_marked_and_named(rheo, fake_model, home):
    fake_model.add(Canned("The first three steps are: one, two, thr", stop_reason="max_tokens"))
    result = rheo("ask", "List every step.")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "The first three steps are: one, two, thr\n"
    line = one_note(result.stderr)
    assert "cut at the max_tokens limit (4,096 tokens)" in line
    assert "rheo config set max_tokens 8192" in line
    assert fake_model.requests[-1].max_tokens == 4096
    [(content, status, meta)] = replies(home)
    assert content == "The first three steps are: one, two, thr"
    assert status == "interrupted" and meta["stop_reason"] == "max_tokens"


def test_the_limit_named_is_the_configured_one_and_json_says_why(rheo, fake_model, home):
    assert rheo("config", "set", "max_tokens", "700").exit_code == 0
    fake_model.add(Canned("Cut sh", stop_reason="max_tokens"))
    result = rheo("ask", "--json", "A long answer, please.")
    assert result.exit_code == 0, result.stderr
    assert fake_model.requests[-1].max_tokens == 700
    out = json.loads(result.stdout)
    assert out["reply"] == "Cut sh"
    assert out["status"] == "interrupted" and out["stop_reason"] == "max_tokens"
    line = one_note(result.stderr)
    assert "(700 tokens)" in line and "rheo config set max_tokens 1400" in line


def test_a_complete_reply_stays_ok_and_says_nothing(rheo, fake_model, home):
    fake_model.add("All done.")
    result = rheo("ask", "--json", "Short answer.")
    assert result.exit_code == 0 and result.stderr == ""
    assert json.loads(result.stdout)["stop_reason"] == "end_turn"
    assert replies(home) == [("All done.", "ok", {"reply_to": 1})]


def test_a_reply_cut_before_any_text_is_an_error_that_names_the_limit(rheo, fake_model, home):
    fake_model.add(Canned("", stop_reason="max_tokens"))
    result = rheo("ask", "Anything?")
    assert result.exit_code == 1
    assert "cut at the max_tokens limit (4,096 tokens) before any text" in result.stderr
    [(_, status, meta)] = replies(home)
    assert status == "error" and meta["stop_reason"] == "max_tokens"


@pytest.fixture
def oai(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")
        yield server


@pytest.mark.boundary
def test_openai_finish_reason_length_is_a_cut_reply(rheo, oai, home):
    oai.queue(oai_text("Half of the ans", finish_reason="length"))
    result = rheo("ask", "--provider", "openai", "-m", "gpt-test", "Explain it all.")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Half of the ans\n"
    line = one_note(result.stderr)
    assert "cut at the max_tokens limit (4,096 tokens)" in line
    assert "rheo config set max_tokens 8192" in line
    [(content, status, meta)] = replies(home)
    assert content == "Half of the ans"
    assert status == "interrupted" and meta["stop_reason"] == "max_tokens"


@pytest.mark.boundary
def test_claude_code_stop_reason_max_tokens_names_its_own_setting(rheo, home, monkeypatch):
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    result = rheo(
        "ask",
        "Write the whole chapter.",
        FAKE_CLAUDE_REPLY="Chapter one. It was a dark and",
        FAKE_CLAUDE_STOP="max_tokens",
    )
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Chapter one. It was a dark and\n"
    line = one_note(result.stderr)
    assert "cut at Claude Code's output token limit" in line
    assert "CLAUDE_CODE_MAX_OUTPUT_TOKENS" in line
    [(_, status, meta)] = replies(home)
    assert status == "interrupted" and meta["stop_reason"] == "max_tokens"


@pytest.mark.boundary
def test_claude_code_complete_reply_stays_ok(rheo, home, monkeypatch):
    monkeypatch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    result = rheo("ask", "Hi", FAKE_CLAUDE_REPLY="Hello.")
    assert result.exit_code == 0 and result.stderr == ""
    assert replies(home)[0][1] == "ok"


def test_the_repl_shows_one_notice_and_the_transcript_says_why(fake_model, home, rheo):
    fake_model.add(Canned("A cut repl", stop_reason="max_tokens"), "Fine.")
    out = io.StringIO()
    rt = runtime.build()
    with create_pipe_input() as pipe:
        pipe.send_text("tell me everything\rthanks\r\x04")
        try:
            run_repl(rt, input=pipe, output=DummyOutput(), out=out, rendered=False)
        finally:
            rt.close()
    shown = out.getvalue()
    notes = [ln for ln in shown.splitlines() if ln.startswith("rheo: note:")]
    assert len(notes) == 1 and "cut at the max_tokens limit" in notes[0], shown
    assert "A cut repl" in shown and "Fine." in shown
    assert [r[1] for r in replies(home)] == ["interrupted", "ok"]
    transcript = rheo("sessions", "show", "1")
    assert "(interrupted: cut at the max_tokens limit)" in transcript.stdout
