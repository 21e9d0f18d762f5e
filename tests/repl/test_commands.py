"""The REPL's terminal-craft commands: /sessions, /model, /file, /edit, /copy."""

from __future__ import annotations

import base64
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import db_rows
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from rheo_cli.app import app as runtime
from rheo_cli.repl.app import run_repl
from rheo_cli.ui import clipboard

CTRL_D = "\x04"


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


def sent(fake_model) -> str:
    """The person's message in the last request (after rheo's context blocks)."""
    return fake_model.last.messages[-1]["content"][-1]["text"]


def script(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def test_help_lists_the_new_commands(pipe, fake_model, home):
    out = repl(pipe, "/help\r" + CTRL_D)
    for line in ("/sessions [N]", "/model [NAME]", "/file PATH", "/edit", "/copy"):
        assert line in out


def test_sessions_lists_them_as_the_command_line_does(pipe, fake_model, home, rheo):
    out = repl(pipe, "/sessions\r" + CTRL_D)
    assert "(no sessions)" in out
    fake_model.add("Hi.")
    out = repl(pipe, "hello\r/sessions\r/sessions x\r" + CTRL_D)
    listed = rheo("sessions", "list", "-n", "10").stdout.splitlines()
    assert listed[0].startswith("session") and listed[1].startswith("s1")
    shown = out.splitlines()
    at = shown.index(listed[0])
    assert shown[at : at + len(listed)] == listed
    assert "usage: /sessions [N]" in out


def test_model_shows_and_switches_for_this_repl_only(pipe, fake_model, home):
    fake_model.add("one", "two", "three")
    out = repl(
        pipe,
        "/model\rfirst\r/model claude-haiku-9\rsecond\r/model openai:gpt-x\rthird\r/model\r"
        + CTRL_D,
        model="claude-test-1",
        provider="anthropic",
    )
    assert "model: claude-test-1 (anthropic)" in out
    assert "model: claude-haiku-9 (anthropic) for the rest of this REPL" in out
    assert [r.model for r in fake_model.requests] == [
        "claude-test-1",
        "claude-haiku-9",
        "claude-haiku-9",
    ]
    refused = [line for line in out.splitlines() if "gpt-x" in line]
    assert refused == [
        "rheo: --provider anthropic does not match -m openai:gpt-x (name one provider)"
    ]
    assert out.rstrip().endswith("model: claude-haiku-9 (anthropic)")
    models = db_rows(home, "SELECT model FROM turns WHERE role = 'assistant' ORDER BY id")
    assert [r[0] for r in models] == ["claude-test-1", "claude-haiku-9", "claude-haiku-9"]
    assert not (home / "config.toml").exists() or "haiku" not in (home / "config.toml").read_text()


def test_switch_model_refuses_what_model_refuses_and_keeps_the_model(home):
    from rheo_cli.errors import UsageError

    with runtime.build(model="claude-test-1", environ={"ANTHROPIC_API_KEY": "k"}) as app:
        for bad, says in (("  ", "needs a model name"), ("bad\x07name", "printable")):
            with pytest.raises(UsageError, match=says):
                app.switch_model(bad)
        assert app.model == "claude-test-1"
        app.switch_model("openai:gpt-5-mini")
        assert (app.choice.kind, app.model) == ("openai", "gpt-5-mini")


def test_file_attaches_to_the_next_message_only(pipe, fake_model, home, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("Lisbon in May.\n")
    fake_model.add("Noted.", "Plain.")
    out = repl(pipe, f"/file {notes}\rwhat is planned?\rand now?\r" + CTRL_D)
    assert f"attached {notes} to the next message" in out
    assert len(fake_model.requests) == 2
    first = fake_model.requests[0].messages[-1]["content"][-1]["text"]
    assert first.endswith(f'what is planned?\n\n<file name="{notes}">\nLisbon in May.\n</file>')
    assert sent(fake_model).endswith("\nand now?")  # the file stays in the first message only
    stored = db_rows(home, "SELECT content FROM turns WHERE role = 'user' ORDER BY id")
    assert "Lisbon in May." in stored[0][0] and stored[1][0] == "and now?"


def test_file_refuses_a_binary_or_missing_file_in_one_line(pipe, fake_model, home, tmp_path):
    picture = tmp_path / "photo.png"
    picture.write_bytes(b"\x89PNG\x00\x00")
    fake_model.add("ok")
    out = repl(pipe, f"/file {picture}\r/file {tmp_path / 'nope.md'}\r/file\rhi\r" + CTRL_D)
    assert f"rheo: {picture} is not a text file\n" in out
    assert f"rheo: no such file: {tmp_path / 'nope.md'}\n" in out
    assert "usage: /file PATH" in out
    assert sent(fake_model).endswith("hi")  # nothing was attached


def test_edit_sends_what_the_editor_leaves(pipe, fake_model, home, tmp_path, monkeypatch):
    editor = script(tmp_path / "bin", "ed.sh", 'printf "written in\\nthe editor\\n" > "$1"\n')
    monkeypatch.setenv("VISUAL", str(editor))
    fake_model.add("Got it.")
    out = repl(pipe, "/edit\r" + CTRL_D)
    assert "Got it." in out
    assert sent(fake_model).endswith("written in\nthe editor")
    stored = db_rows(home, "SELECT content FROM turns WHERE role = 'user'")
    assert [r[0] for r in stored] == ["written in\nthe editor"]


def test_edit_with_no_editor_or_an_empty_text_sends_nothing(
    pipe, fake_model, home, tmp_path, monkeypatch
):
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", " ")
    out = repl(pipe, "/edit\r" + CTRL_D)
    assert "rheo: no editor is set: set $VISUAL or $EDITOR" in out
    monkeypatch.setenv("EDITOR", str(script(tmp_path / "bin", "empty.sh", ': > "$1"\n')))
    out = repl(pipe, "/edit\r" + CTRL_D)
    assert "(empty message: nothing sent)" in out
    monkeypatch.setenv("EDITOR", str(script(tmp_path / "bin", "fail.sh", "exit 3\n")))
    out = repl(pipe, "/edit\r" + CTRL_D)
    assert "rheo: the editor exited with status 3; nothing was sent" in out
    assert fake_model.requests == []


def test_copy_writes_osc_52_without_a_clipboard_program(pipe, fake_model, home, monkeypatch):
    for name in ("DISPLAY", "WAYLAND_DISPLAY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(clipboard.shutil, "which", lambda name: None)
    fake_model.add("Café at 9.")
    out = repl(pipe, "/copy\rwhen?\r/copy\r" + CTRL_D)
    assert "rheo: nothing to copy yet: no reply in this REPL" in out
    encoded = base64.b64encode("Café at 9.".encode()).decode()
    assert f"\x1b]52;c;{encoded}\x07" in out
    assert "copied the last reply (10 characters) with the terminal (OSC 52)" in out


def test_copy_uses_a_clipboard_program_when_its_session_is_there(tmp_path, monkeypatch):
    got = tmp_path / "got.txt"
    bin_dir = tmp_path / "bin"
    script(bin_dir, "xclip", f'[ "$1 $2" = "-selection clipboard" ] && cat > "{got}"\n')
    script(bin_dir, "wl-copy", "exit 0\n")  # no Wayland session: not used
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + os.environ["PATH"])
    terminal = io.StringIO()
    env = {"DISPLAY": ":0"}
    assert clipboard.copy("the reply", terminal, environ=env) == "xclip"
    assert got.read_text() == "the reply" and terminal.getvalue() == ""
    script(bin_dir, "xclip", "exit 1\n")  # a failing program: the terminal instead
    assert clipboard.copy("again", terminal, environ=env) == "the terminal (OSC 52)"
    assert terminal.getvalue() == clipboard.osc52("again")


def test_tab_completes_a_path_after_file(tmp_path):
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from rheo_cli.repl.completion import SlashCompleter

    (tmp_path / "notes.md").write_text("x")
    completer = SlashCompleter({"/file": "attach"}, lambda cmd: [], set())
    line = f"/file {tmp_path}/no"
    found = completer.get_completions(Document(line), CompleteEvent(completion_requested=True))
    assert [c.text for c in found] == ["tes.md"]
