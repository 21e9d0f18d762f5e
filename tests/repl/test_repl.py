"""The REPL, driven through prompt-toolkit's pipe input."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest
from helpers import db_rows
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from rheo_cli.app import app as runtime
from rheo_cli.repl.app import run_repl


@pytest.fixture
def pipe() -> Iterator:
    with create_pipe_input() as inp:
        yield inp


def repl(pipe, keys: str, **kw) -> str:
    pipe.send_text(keys)
    out = io.StringIO()
    rt = runtime.build(**kw)
    try:
        run_repl(rt, input=pipe, output=DummyOutput(), out=out, rendered=False)
    finally:
        rt.close()
    return out.getvalue()


CTRL_D = "\x04"


def test_chat_turns_and_ctrl_d_exit(pipe, fake_model, home):
    fake_model.add("Hello Ana!", "You are Ana.")
    out = repl(pipe, "I am Ana\rwho am I?\r" + CTRL_D)
    assert "Hello Ana!" in out and "You are Ana." in out
    rows = db_rows(home, "SELECT role, content FROM turns ORDER BY id")
    assert [tuple(r) for r in rows] == [
        ("user", "I am Ana"),
        ("assistant", "Hello Ana!"),
        ("user", "who am I?"),
        ("assistant", "You are Ana."),
    ]
    assert "user: I am Ana" in fake_model.last.messages[0]["content"][-1]["text"]


def test_escape_enter_makes_a_multi_line_message(pipe, fake_model, home):
    repl(pipe, "line one\x1b\rline two\r" + CTRL_D)
    assert db_rows(home, "SELECT content FROM turns WHERE role='user'")[0][0] == (
        "line one\nline two"
    )


def test_bracketed_paste_arrives_whole(pipe, fake_model, home):
    repl(pipe, "\x1b[200~first\nsecond\nthird\x1b[201~\r" + CTRL_D)
    assert db_rows(home, "SELECT content FROM turns WHERE role='user'")[0][0] == (
        "first\nsecond\nthird"
    )


def test_history_file_persists_input(pipe, fake_model, home):
    repl(pipe, "remember this line\r/exit\r")
    history = (home / "history" / "default").read_text()
    assert "remember this line" in history


def test_slash_commands(pipe, fake_model, home):
    fake_model.add("Stored.")
    out = repl(
        pipe,
        "/help\rnote about zebras\r/history zebras\r/context next\r/new\r/bogus\r/exit\r",
    )
    assert "/history QUERY" in out  # help text
    assert "note about zebras" in out  # /history found the turn
    assert "=== CURRENT SESSION ===" in out  # /context
    assert "next message starts a new session" in out
    assert "unknown command /bogus" in out


def test_new_starts_a_session(pipe, fake_model, home):
    repl(pipe, "one\r/new\rtwo\r" + CTRL_D)
    sessions = [r[0] for r in db_rows(home, "SELECT session_id FROM turns ORDER BY id")]
    assert sessions == [1, 1, 2, 2]


def test_failed_call_keeps_the_repl_alive(pipe, fake_model, home):
    from fakeprovider import Canned, api_error

    fake_model.add(Canned(error=api_error(400, "invalid_request_error", "nope")), "second works")
    out = repl(pipe, "first\rsecond\r" + CTRL_D)
    assert "rheo: the API refused the request (400)" in out
    assert "second works" in out


class InterruptingProvider:
    """A provider whose first reply is cut by Ctrl-C after some text."""

    name = "interrupting"

    def __init__(self) -> None:
        self.calls = 0

    def stream(self, request):
        from rheo_cli.providers.base import Finished, TextDelta, Usage

        self.calls += 1
        if self.calls == 1:
            yield TextDelta("partial answ")
            raise KeyboardInterrupt
        yield TextDelta("full answer")
        yield Finished("end_turn", Usage(1, 1), "m", [{"type": "text", "text": "full answer"}])


def test_ctrl_c_during_a_reply_keeps_partial_and_repl_alive(pipe, home, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    pipe.send_text("question one\rquestion two\r" + CTRL_D)
    out = io.StringIO()
    rt = runtime.build()
    rt.set_provider(InterruptingProvider())
    run_repl(rt, input=pipe, output=DummyOutput(), out=out, rendered=False)
    assert "interrupted: the partial reply is kept as turn #2" in out.getvalue()
    rows = db_rows(home, "SELECT role, content, status FROM turns ORDER BY id")
    assert [tuple(r) for r in rows] == [
        ("user", "question one", None),
        ("assistant", "partial answ", "interrupted"),
        ("user", "question two", None),
        ("assistant", "full answer", "ok"),
    ]


def test_rendered_markdown_output(pipe, fake_model, home):
    fake_model.add("# Title\n\n- item one\n- item two")
    pipe.send_text("md please\r" + CTRL_D)
    out = io.StringIO()
    rt = runtime.build()
    run_repl(rt, input=pipe, output=DummyOutput(), out=out, rendered=True)
    shown = out.getvalue()
    assert "Title" in shown and "item one" in shown
    assert "# Title" not in shown  # rendered, not raw markdown


def test_missing_key_is_reported_and_the_message_kept(pipe, home, monkeypatch):
    monkeypatch.setenv("RHEO_PROVIDER", "anthropic")  # chosen, but no key
    out = repl(pipe, "hello\r" + CTRL_D)
    assert "ANTHROPIC_API_KEY is not set" in out
    assert db_rows(home, "SELECT content FROM turns WHERE role = 'user'")[0][0] == "hello"


def test_missing_key_shows_setup_guidance_and_stores_nothing(pipe, home):
    out = repl(pipe, "hello\r" + CTRL_D)
    assert "none is configured" in out and "export ANTHROPIC_API_KEY" in out
    assert not (home / "rheo.db").exists()  # nothing stored, not even an empty store


def test_history_file_is_private(pipe, fake_model, home):
    import stat

    repl(pipe, "x\r" + CTRL_D)
    assert stat.S_IMODE((home / "history" / "default").stat().st_mode) == 0o600


def test_incognito_with_a_word_other_than_on_or_off_is_a_usage_line(pipe, fake_model, home):
    fake_model.add("stored")
    out = repl(pipe, "/incognito maybe\r/incognito on please\rstill kept\r" + CTRL_D)
    assert out.count("usage: /incognito [on|off]") == 2
    assert "Incognito:" not in out
    rows = db_rows(home, "SELECT content FROM turns WHERE role = 'user'")
    assert [r[0] for r in rows] == ["still kept"]


def test_a_reply_whose_session_was_purged_meanwhile_is_one_line_and_the_repl_goes_on(
    pipe, fake_model, home
):
    from datetime import UTC, datetime

    from rheo_cli.memory import purge
    from rheo_cli.memory.store import db

    def purge_then_answer(rec):
        conn = db.open_store(home / "rheo.db")
        try:
            target = purge.plan(conn, profile="default", what="profile", ref_id=None)
            purge.purge(conn, target, now=datetime.now(UTC))
        finally:
            conn.close()
        fake_model.handler = lambda rec: "fine again"
        return "too late"

    fake_model.handler = purge_then_answer
    out = repl(pipe, "first\rsecond\r" + CTRL_D)
    assert "the session of this question was purged meanwhile" in out
    assert "fine again" in out
    rows = db_rows(home, "SELECT content FROM turns ORDER BY id")
    assert [r[0] for r in rows] == ["second", "fine again"]


def test_the_prompt_says_incognito_while_it_is_on(pipe, fake_model, home, monkeypatch):
    from prompt_toolkit import PromptSession

    shown: list[str] = []
    real = PromptSession.prompt

    def spy(self, message=None, *args, **kwargs):
        shown.append(str(message))
        return real(self, message, *args, **kwargs)

    monkeypatch.setattr(PromptSession, "prompt", spy)
    repl(pipe, "/incognito on\r/incognito off\r" + CTRL_D)
    assert shown[:3] == ["› ", "incognito › ", "› "], shown
