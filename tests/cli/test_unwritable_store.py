"""Memory never breaks the chat, even when the ledger itself cannot be written: `rheo ask` and
the REPL still answer — with the context that can be read — print the reply, and say in one
line that the exchange was not stored and why; nothing stored is changed. A store that cannot
even be opened gives a reply made without memory, with one line.

Read-only files are simulated for real: the child process loses CAP_DAC_OVERRIDE (the tests
may run as root), so a 0400 file or a 0500 folder refuses it as it refuses any user; a full
disk is RLIMIT_FSIZE (EFBIG, as SQLite sees a full disk), as in test_damaged_store.py."""

from __future__ import annotations

import gc
import hashlib
import io
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import netguard
import pytest
from fakeapi import error, text
from fakeprovider import FakeProvider
from helpers import REPO, api_env, db_rows, request_text
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from rheo_cli.app import app as runtime
from rheo_cli.repl.app import run_repl

NOW = "2026-03-04T10:05:00+00:00"


def _seed(rheo, model, monkeypatch) -> None:
    """A session with one exchange about Porto and a memory item, a few minutes ago;
    ``model``: the in-process fake model, or the fake API of a boundary test."""
    monkeypatch.setenv("RHEO_NOW", "2026-03-04T10:00:00+00:00")
    if isinstance(model, FakeProvider):
        model.add("Noted: Porto.")
    else:
        model.queue(text("Noted: Porto."))
    assert rheo("ask", "I live in Porto and like trains.").exit_code == 0
    assert rheo("memory", "add", "Prefers the window seat", "-t", "seat").exit_code == 0
    monkeypatch.setenv("RHEO_NOW", NOW)


def _state(home: Path) -> list[list[tuple]]:
    """Everything the store holds that matters: the ledger, sessions, memory items, jobs."""
    return [
        [tuple(r) for r in db_rows(home, f"SELECT * FROM {table} ORDER BY id")]
        for table in ("turns", "sessions", "memory_items", "jobs")
    ]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _no_override(fsize: int | None = None):
    """For the child: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the bounding set (a
    root child then meets file permissions like anyone; without the privilege to drop them
    nothing changes, and permissions already apply), and optionally cap file sizes."""

    def pre() -> None:
        import ctypes
        import resource
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
            libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
        if fsize is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    return pre


def _ask(api, home: Path, *args: str, fsize: int | None = None) -> subprocess.CompletedProcess:
    env = netguard.subprocess_env(api_env(api, home, RHEO_WORKER="off", RHEO_NOW=NOW))
    return subprocess.run(
        [sys.executable, "-m", "rheo_cli", "ask", *args],
        env=env,
        cwd=str(REPO),
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_no_override(fsize),
    )


def _one_note(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rheo: note: "), stderr
    return lines[0]


@pytest.mark.boundary
def test_a_read_only_store_file_still_answers_with_its_memory(rheo, api, home, monkeypatch):
    _seed(rheo, api, monkeypatch)
    before, sha = _state(home), _sha(home / "rheo.db")
    os.chmod(home / "rheo.db", 0o400)
    try:
        api.queue(text("You live in Porto."))
        proc = _ask(api, home, "Where do I live?")
    finally:
        os.chmod(home / "rheo.db", 0o600)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "You live in Porto.\n"
    line = _one_note(proc.stderr)
    assert "this exchange was not stored" in line and "read-only" in line, line
    sent = request_text(api.last)
    assert "user: I live in Porto and like trains." in sent  # CURRENT SESSION was read
    assert "Prefers the window seat" in sent  # CURRENT MEMORY too
    assert not api.last.body.get("tools")  # nothing could write memory
    assert _sha(home / "rheo.db") == sha and _state(home) == before
    assert db_rows(home, "PRAGMA integrity_check")[0][0] == "ok"


@pytest.mark.boundary
def test_a_read_only_folder_answers_with_its_memory_in_one_line(rheo, api, home, monkeypatch):
    """SQLite cannot make the -wal and -shm files a WAL database needs even to be read, so the
    store is opened read-only (immutable: nobody can be writing it without a -wal file);
    before, this answered without memory ("memory unavailable: cannot open …")."""
    _seed(rheo, api, monkeypatch)
    gc.collect()  # connections the in-process commands left open: their -wal/-shm go
    assert sorted(os.listdir(home)) == ["rheo.db"]  # nothing writable left in the folder
    before, sha = _state(home), _sha(home / "rheo.db")
    os.chmod(home, 0o500)
    try:
        api.queue(text("You live in Porto."))
        proc = _ask(api, home, "-c", "Where do I live?")
    finally:
        os.chmod(home, 0o700)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "You live in Porto.\n"
    line = _one_note(proc.stderr)
    assert "this exchange was not stored" in line and "read-only" in line, line
    sent = request_text(api.last)
    assert "user: I live in Porto and like trains." in sent  # CURRENT SESSION was read
    assert "Prefers the window seat" in sent  # CURRENT MEMORY too
    assert not api.last.body.get("tools")  # nothing could write memory
    assert _sha(home / "rheo.db") == sha and _state(home) == before
    assert sorted(os.listdir(home)) == ["rheo.db"]


@pytest.mark.boundary
def test_a_full_disk_still_answers_and_later_stores_again(rheo, api, home, monkeypatch):
    _seed(rheo, api, monkeypatch)
    before = _state(home)
    api.queue(text("You live in Porto."))
    proc = _ask(api, home, "Where do I live?", fsize=4096)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "You live in Porto.\n"
    line = _one_note(proc.stderr)
    assert "not stored" in line and "disk" in line, line
    assert "user: I live in Porto and like trains." in request_text(api.last)
    assert _state(home) == before
    assert db_rows(home, "PRAGMA integrity_check")[0][0] == "ok"
    api.queue(text("Still Porto."))
    result = rheo("ask", "And now?")  # with room again, turns are stored as before
    assert result.exit_code == 0 and result.stderr == ""
    assert [r[0] for r in db_rows(home, "SELECT content FROM turns ORDER BY id")][-2:] == [
        "And now?",
        "Still Porto.",
    ]


@pytest.mark.boundary
def test_a_failed_call_on_an_unwritable_store_is_one_line_exit_1(rheo, api, home, monkeypatch):
    _seed(rheo, api, monkeypatch)
    before = _state(home)
    os.chmod(home / "rheo.db", 0o400)
    try:
        api.queue(error(401, "authentication_error", "invalid x-api-key"))
        proc = _ask(api, home, "Where do I live?")
    finally:
        os.chmod(home / "rheo.db", 0o600)
    assert proc.returncode == 1 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "this exchange was not stored" in lines[0] and "--retry" not in lines[0]
    assert _state(home) == before


def test_a_reply_that_cannot_be_stored_is_still_delivered(rheo, fake_model, home, monkeypatch):
    """The question is stored; then the ledger refuses writes (here a trigger added while the
    reply streams stands for the disk filling up): the reply is printed, said unstored."""
    _seed(rheo, fake_model, monkeypatch)

    def refuse_replies(rec):
        conn = sqlite3.connect(home / "rheo.db")
        conn.execute(
            "CREATE TRIGGER full_disk BEFORE INSERT ON turns WHEN NEW.role = 'assistant' "
            "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
        conn.close()
        return "You live in Porto."

    fake_model.handler = refuse_replies
    result = rheo("ask", "Where do I live?")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "You live in Porto.\n"
    line = _one_note(result.stderr)
    assert "the reply was not stored" in line and "(the question is kept)" in line, line
    contents = [r[0] for r in db_rows(home, "SELECT content FROM turns ORDER BY id")]
    assert contents[-1] == "Where do I live?"
    assert db_rows(home, "SELECT count(*) FROM jobs WHERE ref_id = 0")[0][0] == 0


def test_the_repl_answers_when_the_ledger_cannot_be_written(rheo, fake_model, home, monkeypatch):
    _seed(rheo, fake_model, monkeypatch)
    conn = sqlite3.connect(home / "rheo.db")
    conn.execute("DROP TABLE sessions")
    conn.close()
    before = [tuple(r) for r in db_rows(home, "SELECT * FROM turns ORDER BY id")]
    fake_model.add("You live in Porto.", "Trains, yes.")
    out = io.StringIO()
    rt = runtime.build()
    with create_pipe_input() as pipe:
        pipe.send_text("Where do I live?\rWhat do I like?\r\x04")
        try:
            run_repl(rt, input=pipe, output=DummyOutput(), out=out, rendered=False)
        finally:
            rt.close()
    shown = out.getvalue()
    assert "You live in Porto." in shown and "Trains, yes." in shown, shown
    unstored = [ln for ln in shown.splitlines() if "this exchange was not stored" in ln]
    assert len(unstored) == 2 and all(ln.startswith("rheo: note: ") for ln in unstored), shown
    assert [tuple(r) for r in db_rows(home, "SELECT * FROM turns ORDER BY id")] == before


@pytest.mark.parametrize("flag", [[], ["-c"]])
def test_an_unopenable_store_answers_without_memory(rheo, fake_model, home, monkeypatch, flag):
    """A file that is not a database at all: one line, the reply, the file untouched."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "rheo.db").write_bytes(b"this is not a database" * 100)
    sha = _sha(home / "rheo.db")
    fake_model.add("Hello.")
    result = rheo("ask", *flag, "Hi there")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Hello.\n"
    line = _one_note(result.stderr)
    assert "memory unavailable" in line and "not a usable rheo database" in line, line
    asked = "".join(part["text"] for part in fake_model.last.messages[-1]["content"])
    assert "===" not in asked and asked.endswith("Hi there")
    assert _sha(home / "rheo.db") == sha


def test_an_unreachable_postgresql_store_answers_without_memory(
    rheo, fake_model, home, monkeypatch
):
    import socket

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("RHEO_DATABASE_URL", f"postgresql://rheo@127.0.0.1:{port}/rheo")
    fake_model.add("Hello.")
    result = rheo("ask", "Hi there")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Hello.\n"
    line = _one_note(result.stderr)
    assert "memory unavailable: cannot connect to PostgreSQL" in line, line
