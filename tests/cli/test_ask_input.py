"""``rheo ask`` input and process behaviour: stdin, bad input, pipes, Ctrl-C, exit codes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import netguard
import pytest
from fakeapi import text
from helpers import REPO, db_rows, run_rheo


def user_turns(home):
    return [r[0] for r in db_rows(home, "SELECT content FROM turns WHERE role='user' ORDER BY id")]


def test_question_from_stdin(rheo, fake_model, home):
    result = rheo("ask", input="what is 2+2?\n")
    assert result.exit_code == 0, result.stderr
    assert user_turns(home) == ["what is 2+2?"]


def test_stdin_is_a_document_after_the_argument(rheo, fake_model, home):
    result = rheo("ask", "summarise this", input="line one\nline two\n")
    assert result.exit_code == 0
    assert user_turns(home) == ["summarise this\n\n<stdin>\nline one\nline two\n</stdin>"]
    assert fake_model.last.messages[0]["content"][-1]["text"] == (
        "summarise this\n\n<stdin>\nline one\nline two\n</stdin>"
    )


def test_empty_question_is_a_usage_error(rheo, fake_model, home):
    for args, stdin in ((["ask"], ""), (["ask"], "  \n\n "), (["ask", "  "], None)):
        result = rheo(*args, input=stdin)
        assert result.exit_code == 2, result.stderr
        assert "nothing to ask" in result.stderr
    assert fake_model.requests == []


def test_binary_stdin_is_refused(rheo, fake_model, home):
    result = rheo("ask", input=b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    assert result.exit_code == 2
    assert "binary" in result.stderr and "Traceback" not in result.stderr
    assert fake_model.requests == []


def test_invalid_utf8_on_stdin_replaces_only_the_bad_bytes(rheo, fake_model, home):
    result = rheo("ask", input="café 日本 ".encode() + b"\xff\xfe" + " crème".encode())
    assert result.exit_code == 0
    assert "stdin is not valid UTF-8: 2 invalid byte sequences replaced by U+FFFD" in result.stderr
    assert user_turns(home) == ["café 日本 \ufffd\ufffd crème"]


def test_a_latin1_document_on_stdin_keeps_its_letters(rheo, fake_model, home):
    result = rheo("ask", input="Grüße aus Köln, señor – 20 €".encode("cp1252"))
    assert result.exit_code == 0
    assert "stdin is not valid UTF-8: read as Latin-1 (Windows-1252)" in result.stderr
    assert user_turns(home) == ["Grüße aus Köln, señor – 20 €"]


def test_ten_megabytes_on_stdin_is_stored_whole(rheo, fake_model, home):
    big = ("All work and no play makes Jack a dull boy. " * 240_000)[:10_000_000]
    rheo("ask", "first question")
    result = rheo("ask", input=big)
    assert result.exit_code == 0, result.stderr
    assert "note:" in result.stderr and "context budget" in result.stderr
    stored = db_rows(home, "SELECT content FROM turns WHERE role='user' ORDER BY id")[-1][0]
    assert len(stored) == len(big.strip("\n")) and stored == big.strip("\n")
    # The next request's context holds the big turn clipped, within the budget.
    rheo("ask", "and now?")
    sent = fake_model.last.messages[0]["content"][-1]["text"]
    context_part = sent.rsplit("\n---\n", 1)[0]
    assert len(context_part) < 2000 * 4 + 500
    assert "characters left out; full text in turn #3" in context_part


def test_profiles_isolate_turns(rheo, fake_model, home):
    rheo("--profile", "work", "ask", "the quarterly report")
    rheo("ask", "--profile", "home", "the garden")
    found = rheo("history", "search", "report", "--profile", "home")
    assert found.stdout.strip() == "(no turns)"
    found = rheo("history", "search", "report", "--profile", "work")
    assert "the quarterly report" in found.stdout
    assert rheo("ask", "--profile", "bad name!", "x").exit_code == 2


def _env(api, home, **extra):
    return {
        **os.environ,
        "ANTHROPIC_BASE_URL": api.base_url,
        "ANTHROPIC_API_KEY": "k",
        "RHEO_HOME": str(home),
        **extra,
    }


@pytest.mark.boundary
def test_subprocess_ask_raw_stdout_when_piped(api, home):
    api.queue(text("**bold** reply", chunks=4))
    proc = run_rheo("ask", "hi", env=_env(api, home))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"**bold** reply\n"
    assert proc.stderr == b""


@pytest.mark.boundary
def test_closed_pipe_exits_quietly_and_keeps_the_whole_reply(api, home):
    lines = "".join(f"line {n}\n" for n in range(400))
    api.queue(text(lines, chunks=[f"line {n}\n" for n in range(400)], chunk_delay=0.002))
    env = netguard.subprocess_env(_env(api, home))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rheo_cli", "ask", "count"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(REPO),
    )
    first = proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read()
    code = proc.wait(timeout=30)
    assert first == b"line 0\n"
    assert code == 0
    assert err == b""
    stored = db_rows(home, "SELECT content, status FROM turns WHERE role='assistant'")[0]
    assert tuple(stored) == (lines.strip(), "ok")


@pytest.mark.boundary
def test_ctrl_c_keeps_the_partial_reply_and_exits_130(api, home):
    pieces = [f"word{n} " for n in range(200)]
    api.queue(text("".join(pieces), chunks=pieces, chunk_delay=0.05))
    env = netguard.subprocess_env(_env(api, home))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rheo_cli", "ask", "talk"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=str(REPO),
        # A test run in the background inherits an ignored SIGINT: give rheo the default.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    assert proc.stdout.read(6) == b"word0 "
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err
    assert b"interrupted" in err
    content, status = db_rows(home, "SELECT content, status FROM turns WHERE role='assistant'")[0]
    assert status == "interrupted"
    assert content.startswith("word0 word1") and len(content) < len("".join(pieces))


@pytest.mark.boundary
def test_commands_without_a_model_do_not_import_the_sdk_or_prompt_toolkit(home):
    code = (
        "import sys; from rheo_cli.cli.main import app\n"
        "for args in (['history','recent'], ['history','search','x'], ['sessions','list'],"
        " ['paths','--json'], ['context','hello']):\n"
        "    try:\n"
        "        app(args, prog_name='rheo')\n"
        "    except SystemExit as e:\n"
        "        assert e.code in (0, None), (args, e.code)\n"
        "heavy = ('anthropic', 'prompt_toolkit', 'httpx2', 'httpx')\n"
        "bad = [m for m in heavy if m in sys.modules]\n"
        "print('LOADED', bad)\n"
    )
    env = netguard.subprocess_env({**os.environ, "RHEO_HOME": str(home)})
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, env=env, cwd=str(REPO), timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().strip().endswith("LOADED []")
