"""Hostile input and failures found by trying to break rheo: each ends in one clear line, the
right exit status, no traceback, and nothing stored lost or corrupted."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import netguard
import pytest
from fakeapi import error, text
from fakeprovider import Canned
from helpers import REPO, api_env, db_rows, run_rheo

from rheo_cli.memory.store.errors import Integrity


def env_for(api, home, **extra):
    return api_env(api, home, RHEO_WORKER="off", **extra)


def one_line(stderr: bytes | str) -> str:
    text = stderr.decode() if isinstance(stderr, bytes) else stderr
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, text
    assert "Traceback" not in text
    return lines[0]


# --- secrets ---------------------------------------------------------------------------


@pytest.mark.boundary  # the key and the API's error body: the wire
def test_key_with_a_windows_line_ending_still_works(rheo, api, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-SECRET\r\n")
    result = rheo("ask", "hello")
    assert result.exit_code == 0, result.stderr
    assert api.last.headers.get("authorization") == "Bearer sk-ant-api03-SECRET"


@pytest.mark.boundary  # the key and the API's error body: the wire
def test_key_with_inner_space_is_refused_without_printing_it(rheo, api, monkeypatch, home):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03 SECRETPART")
    result = rheo("ask", "hello")
    line = one_line(result.stderr)
    assert result.exit_code == 1 and "contains spaces" in line and "SECRETPART" not in line
    stored = json.dumps([dict(r) for r in db_rows(home, "SELECT * FROM turns")])
    assert "SECRETPART" not in stored


@pytest.mark.boundary  # the key and the API's error body: the wire
def test_error_body_echoing_the_key_is_redacted(rheo, api, monkeypatch, home):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-TOPSECRET99")
    api.queue(
        error(
            400,
            "invalid_request_error",
            "bad key Bearer sk-ant-api03-TOPSECRET99 \x1b[31mred\x1b[0m",
        )
    )
    result = rheo("ask", "hello")
    line = one_line(result.stderr)
    assert "TOPSECRET99" not in line and "[redacted]" in line and "\x1b" not in line
    assert "TOPSECRET99" not in json.dumps(
        [dict(r) for r in db_rows(home, "SELECT meta FROM turns")]
    )


# --- clock -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value", ["0999-06-01T00:00:00Z", "9999-12-31T23:30:00Z", "0001-01-01T00:00:00+14:00"]
)
def test_rheo_now_out_of_range_is_a_usage_error(rheo, fake_model, monkeypatch, home, value):
    monkeypatch.setenv("RHEO_NOW", value)
    result = rheo("ask", "x")
    assert result.exit_code == 2 and "between the years" in one_line(result.stderr)
    assert fake_model.requests == []


def test_future_dated_turn_does_not_swallow_later_sessions(rheo, fake_model, monkeypatch, home):
    for when in ("2030-01-01T00:00:00Z", "2026-12-01T10:00:00Z", "2026-12-15T10:00:00Z"):
        monkeypatch.setenv("RHEO_NOW", when)
        rheo("ask", "x")
    sessions = [r[0] for r in db_rows(home, "SELECT session_id FROM turns ORDER BY id")]
    assert sessions == [1, 1, 2, 2, 3, 3]


# --- input -----------------------------------------------------------------------------


def test_stdin_over_the_limit_is_refused(rheo, fake_model, monkeypatch):
    from rheo_cli.cli import inputs

    monkeypatch.setattr(inputs, "MAX_STDIN_BYTES", 1000)
    result = rheo("ask", input="x" * 5000)
    assert result.exit_code == 2 and "larger than" in result.stderr
    assert fake_model.requests == []


@pytest.mark.boundary
def test_dev_zero_on_stdin_fails_at_once(api, home):
    start = time.monotonic()
    with open("/dev/zero", "rb") as zero:
        proc = subprocess.run(
            [sys.executable, "-m", "rheo_cli", "ask"],
            stdin=zero,
            capture_output=True,
            env=netguard.subprocess_env(env_for(api, home)),
            cwd=str(REPO),
            timeout=60,
        )
    assert proc.returncode == 2 and "binary" in one_line(proc.stderr)
    assert time.monotonic() - start < 30


@pytest.mark.boundary
def test_argument_that_is_not_utf8_has_only_its_invalid_bytes_replaced(api, home):
    proc = subprocess.run(
        [sys.executable, "-m", "rheo_cli", "ask", b"caf\xe9 cr\xe8me"],
        capture_output=True,
        env=netguard.subprocess_env(env_for(api, home)),
        cwd=str(REPO),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert b"not valid UTF-8" in proc.stderr
    # No UTF-8 sequence at all: a Latin-1 terminal's bytes, read as Latin-1, no letter lost
    assert db_rows(home, "SELECT content FROM turns WHERE role='user'")[0][0] == "café crème"


@pytest.mark.boundary
@pytest.mark.parametrize(
    "args",
    [
        ["history", "recent", "-n", "0"],
        ["history", "recent", "-n", "abc"],
        ["--bogus"],
        ["nosuchcmd"],
        ["context", "--budget", "-1"],
        ["ask", "-m", "   ", "hi"],
    ],
)
def test_usage_errors_are_one_line_exit_2(home, args):
    proc = run_rheo(*args, env={**os.environ, "RHEO_HOME": str(home)})
    assert proc.returncode == 2
    assert one_line(proc.stderr).startswith("rheo: ")


def test_profile_name_with_a_newline_is_refused(rheo):
    assert rheo("--profile", "work\n", "history", "recent").exit_code == 2


# --- output ----------------------------------------------------------------------------


@pytest.mark.boundary
def test_unwritable_stdout_keeps_the_reply(api, home):
    api.queue(text("the answer"))
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "rheo_cli", "ask", "q"],
            stdout=full,
            stderr=subprocess.PIPE,
            env=netguard.subprocess_env(env_for(api, home)),
            cwd=str(REPO),
            timeout=60,
        )
    assert proc.returncode == 1
    assert "stored as turn #2" in one_line(proc.stderr)
    assert db_rows(home, "SELECT content, status FROM turns WHERE id = 2")[0][:] == (
        "the answer",
        "ok",
    )


@pytest.mark.boundary
def test_listing_into_a_closed_pipe_exits_zero(api, home):
    from datetime import UTC, datetime, timedelta

    from rheo_cli.memory.ledger import turns as ledger
    from rheo_cli.memory.store import db

    conn = db.open_store(home / "rheo.db")  # seeded through the engine: the pipe is the point
    start = datetime(2026, 4, 1, 9, tzinfo=UTC)
    for n in range(100):
        role = "user" if n % 2 == 0 else "assistant"
        ledger.append_turn(
            conn,
            profile="default",
            role=role,
            content=f"turn {n}",
            status=None if role == "user" else "ok",
            now=start + timedelta(seconds=n),
            gap_s=7200,
        )
    conn.close()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rheo_cli", "history", "recent", "-n", "100"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=netguard.subprocess_env(env_for(api, home)),
        cwd=str(REPO),
    )
    proc.stdout.readline()
    proc.stdout.close()
    assert proc.wait(timeout=30) == 0
    assert proc.stderr.read() == b""


# --- the store -------------------------------------------------------------------------


def test_insert_or_replace_cannot_rewrite_the_ledger(rheo, fake_model, home):
    rheo("ask", "keep me")
    conn = sqlite3.connect(home / "rheo.db")  # a plain connection: no recursive triggers
    with pytest.raises(sqlite3.IntegrityError, match="append-only"):
        conn.execute(
            "INSERT OR REPLACE INTO turns(id, profile, session_id, role, content, ts) "
            "SELECT id, profile, session_id, role, 'REWRITTEN', ts FROM turns WHERE id = 1"
        )
    conn.close()
    assert db_rows(home, "SELECT content FROM turns WHERE id = 1")[0][0] == "keep me"


def test_rheo_itself_refuses_insert_or_replace(tmp_path):
    from datetime import UTC, datetime

    from rheo_cli.memory.ledger import turns as ledger
    from rheo_cli.memory.store import db

    conn = db.open_store(tmp_path / "r.db")
    ledger.append_turn(
        conn,
        profile="p",
        role="user",
        content="keep",
        gap_s=7200,
        now=datetime(2026, 1, 1, tzinfo=UTC),
    )
    with pytest.raises(Integrity, match="append-only"):
        conn.execute(
            "INSERT OR REPLACE INTO turns(id, profile, session_id, role, content, ts) "
            "VALUES (1, 'p', 1, 'user', 'REWRITTEN', '2026-01-01T00:00:00.000Z')"
        )


def test_database_held_past_the_busy_timeout_is_one_line(rheo, fake_model, home, monkeypatch):
    from rheo_cli.memory.store import api as store_api

    rheo("ask", "first")
    monkeypatch.setattr(store_api, "BUSY_TIMEOUT_S", 0.3)
    holder = sqlite3.connect(home / "rheo.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        result = rheo("ask", "second")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert result.exit_code == 1
    assert "busy" in one_line(result.stderr)


def test_reply_is_stored_when_the_lock_clears_later(rheo, fake_model, home, monkeypatch):
    """A lock taken while the reply streams: rheo waits again rather than lose the reply."""
    import threading

    from rheo_cli.memory.store import api as store_api

    monkeypatch.setattr(store_api, "BUSY_TIMEOUT_S", 0.3)

    def hold(reply_started: threading.Event) -> None:
        reply_started.wait(10)
        conn = sqlite3.connect(home / "rheo.db", isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        time.sleep(1.0)  # longer than one busy timeout, shorter than all attempts
        conn.execute("COMMIT")
        conn.close()

    started = threading.Event()
    fake_model.handler = lambda request: (
        started.set(),
        Canned("slow reply", chunk_delay=0.05, chunks=3),
    )[1]
    thread = threading.Thread(target=hold, args=(started,))
    thread.start()
    result = rheo("ask", "q")
    thread.join()
    assert result.exit_code == 0, result.stderr
    assert db_rows(home, "SELECT content FROM turns WHERE role='assistant'")[0][0] == "slow reply"


# --- config ----------------------------------------------------------------------------


def test_config_that_is_not_a_regular_file(rheo, home):
    home.mkdir(parents=True, exist_ok=True)
    os.symlink("/dev/zero", home / "config.toml")
    result = rheo("history", "recent")
    assert result.exit_code == 1 and "not a regular file" in one_line(result.stderr)


def test_fractional_max_tokens_is_refused(rheo, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("max_tokens = 1.5\n")
    result = rheo("history", "recent")
    assert result.exit_code == 1 and "whole number" in one_line(result.stderr)


# --- signals and odd replies -------------------------------------------------------------


@pytest.mark.boundary
def test_sigterm_mid_reply_keeps_the_partial_text(api, home):
    pieces = [f"w{n} " for n in range(100)]
    api.queue(text("".join(pieces), chunks=pieces, chunk_delay=0.05))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rheo_cli", "ask", "talk"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=netguard.subprocess_env(env_for(api, home)),
        cwd=str(REPO),
    )
    assert proc.stdout.read(3) == b"w0 "
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    assert proc.returncode == 143
    content, status = db_rows(home, "SELECT content, status FROM turns WHERE role='assistant'")[0]
    assert status == "interrupted" and content.startswith("w0")


def test_tool_calls_without_any_answer_are_an_error(rheo, fake_model, home):
    fake_model.default = Canned(tool_calls=[("chat_search", {"query": "x"})])
    result = rheo("ask", "q")
    assert result.exit_code == 1 and "no text" in one_line(result.stderr)
    assert db_rows(home, "SELECT status FROM turns WHERE role='assistant'")[0][0] == "error"


def test_concurrent_replies_are_shown_after_their_questions(tmp_path):
    from datetime import UTC, datetime, timedelta

    from rheo_cli.memory.context import assemble as context
    from rheo_cli.memory.ledger import turns as ledger
    from rheo_cli.memory.store import db
    from rheo_cli.memory.store.settings import Settings

    conn = db.open_store(tmp_path / "c.db")
    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def add(role, content, n, **kw):
        return ledger.append_turn(
            conn,
            profile="p",
            role=role,
            content=content,
            gap_s=7200,
            now=t0 + timedelta(seconds=n),
            **kw,
        ).turn

    q1 = add("user", "question one", 0)
    q2 = add("user", "question two", 1)
    add(
        "assistant",
        "answer two",
        2,
        status="ok",
        session_id=q2.session_id,
        meta={"reply_to": q2.id},
    )
    add(
        "assistant",
        "answer one",
        3,
        status="ok",
        session_id=q1.session_id,
        meta={"reply_to": q1.id},
    )
    ctx = context.assemble(
        conn, profile="p", message="next", now=t0 + timedelta(seconds=9), settings=Settings()
    )
    shown = [ln.text.split(": ", 1)[1] for ln in ctx.section("CURRENT SESSION").lines]
    assert shown == ["question one", "answer one", "question two", "answer two"]


@pytest.mark.boundary
def test_many_processes_at_once_lose_nothing(api, home):
    api.default = text("ok")
    env = env_for(api, home)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "rheo_cli", "ask", f"parallel {n}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=netguard.subprocess_env(env),
            cwd=str(REPO),
        )
        for n in range(12)
    ]
    errors = [p.communicate(timeout=120)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 12, errors
    users = {r[0] for r in db_rows(home, "SELECT content FROM turns WHERE role='user'")}
    assert users == {f"parallel {n}" for n in range(12)}
    replies = db_rows(home, "SELECT meta FROM turns WHERE role='assistant'")
    assert len(replies) == 12
    assert db_rows(home, "PRAGMA integrity_check")[0][0] == "ok"
    assert db_rows(home, "SELECT sum(turns) FROM sessions")[0][0] == 24
