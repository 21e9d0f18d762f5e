"""Terminal behaviour: REPL Tab completion, continuation prompt and /retry through
prompt-toolkit's pipe input; rendering and first-run guidance on a pseudo-terminal (pty)."""

from __future__ import annotations

import io
import os
import pty
import re
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import netguard
import pytest
from fakeapi import text
from fakeprovider import Canned, api_error
from helpers import REPO, db_rows
from prompt_toolkit.data_structures import Size
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput
from prompt_toolkit.output.vt100 import Vt100_Output

from rheo_cli.app import app as runtime
from rheo_cli.repl.app import run_repl
from rheo_cli.ui import stream
from rheo_cli.ui.stream import ReplyWriter

sys.path.insert(0, str(REPO / "bench"))
import render as bench_render  # noqa: E402

CTRL_D = "\x04"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


@pytest.fixture
def pipe() -> Iterator:
    with create_pipe_input() as inp:
        yield inp


def repl(pipe, keys: str | list[str], output=None) -> str:
    """Run the REPL on ``keys``; a list is typed piece by piece, 0.3 s apart, as a person
    would (Tab completion runs between two pieces)."""
    import threading

    if isinstance(keys, str):
        pipe.send_text(keys)
    else:

        def typist() -> None:
            for piece in keys:
                time.sleep(0.3)
                pipe.send_text(piece)

        threading.Thread(target=typist, daemon=True).start()
    out = io.StringIO()
    rt = runtime.build()
    try:
        run_repl(rt, input=pipe, output=output or DummyOutput(), out=out, rendered=False)
    finally:
        rt.close()
    return out.getvalue()


def test_tab_completes_slash_commands(pipe, fake_model, home):
    out = repl(pipe, ["/hel\t", "\r", CTRL_D])
    assert "/retry" in out and "this list" in out  # /help ran


def test_tab_completes_an_item_id_after_done(pipe, fake_model, home):
    from rheo_cli.cli.main import run

    assert run(["memory", "add", "water the plants", "-t", "plants", "-c", "open_item"]) == 0
    assert run(["memory", "add", "Ana likes tea", "-t", "ana"]) == 0
    out = repl(pipe, ["/done \t", "\r", "/done 1\r", CTRL_D])
    assert "#1 done: water the plants" in out  # the only open item was completed
    assert "#1 already done: water the plants" in out  # the same wording as the CLI's


def test_completer_offers_commands_and_ids_with_meanings():
    from prompt_toolkit.completion import CompleteEvent
    from prompt_toolkit.document import Document

    from rheo_cli.repl.completion import SlashCompleter

    completer = SlashCompleter(
        {"/pin": "keep", "/forget": "retract", "/help": "list"},
        lambda cmd: [(12, "Ana likes tea"), (3, "deploy fridays")],
        {"/pin", "/forget"},
    )

    def complete(line: str) -> list[tuple[str, str]]:
        found = completer.get_completions(Document(line), CompleteEvent(completion_requested=True))
        return [(c.text, c.display_meta_text) for c in found]

    assert complete("/p") == [("/pin", "keep")]
    assert complete("/pin 1") == [("12", "Ana likes tea")]
    assert complete("/pin ") == [("12", "Ana likes tea"), ("3", "deploy fridays")]
    assert complete("/help ") == []
    assert complete("hello /p") == []


def test_multi_line_input_shows_a_continuation_prompt(pipe, fake_model, home):
    screen = io.StringIO()
    output = Vt100_Output(screen, lambda: Size(rows=24, columns=80), term="xterm")
    fake_model.add("ok")
    repl(pipe, "line one\x1b\rline two\r" + CTRL_D, output=output)
    shown = ANSI.sub("", screen.getvalue())
    assert "… line two" in shown or "…line two" in shown.replace(" ", "", 1)
    assert db_rows(home, "SELECT content FROM turns WHERE role='user'")[0][0] == (
        "line one\nline two"
    )


def test_slash_retry_resends_the_failed_question(pipe, fake_model, home):
    fake_model.add(
        Canned(error=api_error(400, "invalid_request_error", "nope")), "Second time lucky."
    )
    out = repl(pipe, "plan my week\r/retry\r/retry\r" + CTRL_D)
    assert "nope" in out and "Second time lucky." in out
    assert "nothing to retry" in out
    users = db_rows(home, "SELECT content FROM turns WHERE role='user'")
    assert [r[0] for r in users] == ["plan my week"]


# --- on a pseudo-terminal ----------------------------------------------------------------


def _read_all(fd: int, proc: subprocess.Popen[bytes], timeout: float = 60) -> str:
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    return b"".join(chunks).decode("utf-8", "replace")


def _on_pty(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rheo_cli", *args],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=netguard.subprocess_env(env),
        cwd=str(REPO),
    )
    os.close(slave)
    try:
        shown = _read_all(master, proc)
        code = proc.wait(timeout=30)
    finally:
        os.close(master)
    return code, shown


@pytest.mark.boundary
def test_first_run_in_a_terminal_shows_setup_and_stores_nothing(home):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC")}
    env.update(RHEO_HOME=str(home), TERM="xterm")
    code, shown = _on_pty([], env)
    assert code == 2
    assert "none is configured" in shown and "export ANTHROPIC_API_KEY" in shown
    assert len(shown.strip().splitlines()) <= 24
    assert not Path(home / "rheo.db").exists()


@pytest.mark.boundary
def test_ask_on_a_terminal_renders_markdown(api, home):
    api.queue(text("# Plan\n\nFirst **bold** step.\n\n- one\n- two\n", chunks=6))
    env = dict(os.environ, RHEO_HOME=str(home), TERM="xterm", COLUMNS="80")
    env.update(ANTHROPIC_BASE_URL=api.base_url, ANTHROPIC_API_KEY="test-key")
    code, shown = _on_pty(["ask", "plan?"], env)
    plain = ANSI.sub("", shown)
    assert code == 0, shown
    assert "Plan" in plain and "bold" in plain and "**bold**" not in plain
    assert "• two" in plain  # a rendered list, not "- two"


def test_a_3000_word_reply_renders_in_linear_time_on_a_pty():
    reply = bench_render.reply(3000)
    result = bench_render.measure(reply, 3, ReplyWriter)
    assert result["deltas"] > 900
    assert result["wall_s"] < 5.0  # about 0.35 s on the development machine (3.4 s before)
    # Each finished block reaches the terminal once and the tail is redrawn at most 15 times
    # a second: output grows with the reply, not with its deltas (a redraw per delta wrote
    # 25 times the reply).
    assert result["bytes"] < 10 * len(reply.encode())


def test_markdown_work_does_not_grow_with_the_number_of_deltas(monkeypatch):
    rendered: list[int] = []
    original = ReplyWriter._markdown

    def counting(self, text_: str):
        rendered.append(len(text_))
        return original(self, text_)

    monkeypatch.setattr(ReplyWriter, "_markdown", counting)
    reply = bench_render.reply(1500)
    pieces = bench_render.deltas(reply, 1)
    writer = ReplyWriter(rendered=True, out=io.StringIO())
    for piece in pieces:
        writer(piece)
    writer.finish()
    assert len(pieces) > 1400
    # Finished blocks are rendered once; the tail only when a redraw is due.
    assert sum(rendered) < 3 * len(reply)


def _old_settled_prefix(text_: str) -> int:
    best = pos = 0
    in_fence = False
    for line in text_.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        pos += len(line)
        if not in_fence and not stripped and pos < len(text_) and line.endswith("\n"):
            best = pos
    return best


def test_incremental_block_splitting_matches_a_full_rescan():
    reply = bench_render.reply(300) + "```\nopen fence\n\nstill code"
    splitter = stream.BlockSplitter()
    for end in range(1, len(reply) + 1, 7):
        assert splitter.feed(reply[:end]) == _old_settled_prefix(reply[:end]), end
