"""`rheo doctor` on stores damaged in the ways it once handled wrongly, and the store opened
when its folder is read-only or its -wal file was removed under a running rheo.

Before: a damaged page of ``turns`` or ``sessions`` made doctor print one line ("the database
is damaged") instead of its list; a 0400 database was reported as broken search indexes
(their check writes); ``--repair`` left a dropped ``jobs`` or ``memory_items`` table missing
(exit 1 each time); on a read-only folder every command, reading ones too, said "cannot
open"; a -wal file removed under a running REPL was "disk I/O error (is the disk full?)" for
the next command, and what that command stored was lost when the REPL exited.

Permissions bind for real: the child loses CAP_DAC_OVERRIDE (the tests may run as root), as in
test_unwritable_store.py."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import netguard
import pytest
from fakeapi import text
from fakeprovider import FakeProvider
from helpers import REPO, api_env, db_rows

from rheo_cli.app.errors import Unavailable, database_message


def _no_override() -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP


def _run(api: Any, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = netguard.subprocess_env(api_env(api, home, RHEO_WORKER="off"))
    return subprocess.run(
        [sys.executable, "-m", "rheo_cli", *args],
        env=env,
        cwd=str(REPO),
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_no_override,
    )


def _seed(rheo: Any, model: Any, turns: int = 120) -> None:
    """Enough turns that ``turns`` spans many pages; a fact; the WAL folded into the file.
    ``model``: the in-process fake model, or the fake API of a boundary test."""
    model.default = "ok" if isinstance(model, FakeProvider) else text("ok")
    for n in range(turns // 2):
        assert rheo("ask", f"message {n} about the lighthouse " + "words " * 40).exit_code == 0
    assert rheo("memory", "add", "Prefers the window seat", "-t", "seat").exit_code == 0
    gc.collect()


def _checkpoint(home: Path) -> None:
    conn = sqlite3.connect(home / "rheo.db")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def _garble_root(home: Path, table: str) -> None:
    """Overwrite the root page of ``table`` (past its header) with noise."""
    _checkpoint(home)
    conn = sqlite3.connect(home / "rheo.db")
    root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    size = conn.execute("PRAGMA page_size").fetchone()[0]
    conn.close()
    with open(home / "rheo.db", "r+b") as f:
        f.seek((root - 1) * size + 8)
        f.write(bytes((n * 37 + 11) % 256 for n in range(size - 100)))


@pytest.mark.parametrize("table", ["turns", "sessions"])
def test_a_damaged_page_gives_the_whole_check_list(rheo, fake_model, home, table):
    _seed(rheo, fake_model)
    _garble_root(home, table)
    for args in (("doctor",), ("doctor", "--repair")):
        out = rheo(*args, "--json")
        assert out.exit_code == 1, out.stderr
        report = json.loads(out.stdout)  # the list, not one line
        names = [c["name"] for c in report["checks"]]
        assert {
            "config",
            "permissions",
            "schema",
            "integrity",
            "tables",
            "sessions",
            "jobs",
        } <= set(names), names
        bad = {c["name"]: c["detail"] for c in report["checks"] if not c["ok"]}
        assert "integrity" in bad and ".recover" in bad["integrity"], bad
        assert "\n" not in bad["integrity"]
    shown = rheo("doctor")
    assert shown.exit_code == 1
    lines = shown.stdout.splitlines()
    assert len(lines) >= 8 and any(ln.startswith("PROBLEM   integrity:") for ln in lines), lines
    assert "Traceback" not in shown.stderr and len(shown.stderr.splitlines()) == 1


@pytest.mark.boundary
def test_a_read_only_file_is_not_blamed_on_the_search_indexes(rheo, api, home):
    _seed(rheo, api, turns=4)
    _checkpoint(home)
    os.chmod(home / "rheo.db", 0o400)
    try:
        proc = _run(api, home, "doctor", "--json")
        repaired = _run(api, home, "doctor", "--repair", "--json")
    finally:
        os.chmod(home / "rheo.db", 0o600)
    assert proc.returncode == 1, proc.stderr
    report = json.loads(proc.stdout)
    bad = {c["name"]: c["detail"] for c in report["checks"] if not c["ok"]}
    assert list(bad) == ["writable"], bad  # before: "search indexes", five times "readonly"
    assert "the file is read-only (mode 0400)" in bad["writable"]
    assert "chmod 600" in bad["writable"]
    assert repaired.returncode == 1 and json.loads(repaired.stdout)["repaired"] == []


@pytest.mark.boundary
def test_a_read_only_folder_is_read_by_the_reading_commands(rheo, api, home, tmp_path):
    _seed(rheo, api, turns=6)
    gc.collect()
    _checkpoint(home)
    for extra in ("rheo.db-wal", "rheo.db-shm"):
        (home / extra).unlink(missing_ok=True)
    sha = hashlib.sha256((home / "rheo.db").read_bytes()).hexdigest()
    files = sorted(os.listdir(home))
    os.chmod(home, 0o500)
    try:
        runs = {
            args: _run(api, home, *args)
            for args in (
                ("history", "recent", "--json"),
                ("history", "search", "lighthouse", "--json"),
                ("sessions", "list", "--json"),
                ("memory", "list", "--json"),
                ("items", "list", "--json"),
                ("export",),
                ("context", "the lighthouse?"),
                ("doctor", "--json"),
                ("memory", "add", "x", "-t", "y"),
                ("ask", "Where is the lighthouse?"),
            )
        }
    finally:
        os.chmod(home, 0o700)
    for args in list(runs)[:7]:
        assert runs[args].returncode == 0, (args, runs[args].stderr)
    for args in (
        ("history", "search", "lighthouse", "--json"),
        ("export",),
        ("context", "the lighthouse?"),
    ):
        assert "lighthouse" in runs[args].stdout, args
    assert "window seat" in runs[("memory", "list", "--json")].stdout
    assert json.loads(runs[("sessions", "list", "--json")].stdout)[0]["turns"] == 6
    assert len(json.loads(runs[("history", "recent", "--json")].stdout)) == 6
    doctor = json.loads(runs[("doctor", "--json")].stdout)
    bad = {c["name"]: c["detail"] for c in doctor["checks"] if not c["ok"]}
    assert list(bad) == ["writable"] and "its folder is read-only" in bad["writable"], bad
    add = runs[("memory", "add", "x", "-t", "y")]
    assert add.returncode == 1 and add.stderr.strip() == (
        "rheo: cannot write the database: it is read-only (check its permissions)"
    )
    ask = runs[("ask", "Where is the lighthouse?")]
    assert ask.returncode == 0 and ask.stdout == "ok\n", ask.stderr
    assert "this exchange was not stored: cannot write the database: it is read-only" in ask.stderr
    assert "lighthouse" in api.last.body["messages"][-1]["content"][0]["text"]  # with memory
    assert hashlib.sha256((home / "rheo.db").read_bytes()).hexdigest() == sha
    assert sorted(os.listdir(home)) == files


@pytest.mark.parametrize("table", ["jobs", "memory_items", "sessions", "kb_chunks", "purges"])
def test_repair_makes_a_dropped_table_again(rheo, fake_model, home, tmp_path, table):
    _seed(rheo, fake_model, turns=6)
    doc = tmp_path / "notes.md"
    doc.write_text("# Lighthouse\n\nThe keeper lives there.\n")
    assert rheo("kb", "add", str(doc)).exit_code == 0
    sessions = [tuple(r) for r in db_rows(home, "SELECT * FROM sessions ORDER BY id")]
    referenced = db_rows(home, "SELECT max(item_id) FROM memory_events")[0][0]
    conn = sqlite3.connect(home / "rheo.db")
    conn.execute(f"DROP TABLE {table}")
    conn.close()
    out = rheo("doctor", "--json")
    bad = {c["name"]: c["detail"] for c in json.loads(out.stdout)["checks"] if not c["ok"]}
    assert out.exit_code == 1 and bad.get("tables") == f"missing: {table}", bad
    first = rheo("doctor", "--repair", "--json")
    report = json.loads(first.stdout)
    assert first.exit_code == 0 and report["healthy"], report
    assert any(f"made the missing table {table} again" in r for r in report["repaired"])
    second = rheo("doctor", "--repair", "--json")
    assert second.exit_code == 0 and json.loads(second.stdout)["repaired"] == []
    if table == "sessions":  # made again from the turns that name them
        assert [tuple(r) for r in db_rows(home, "SELECT * FROM sessions ORDER BY id")] == sessions
    # The store works again, and a new row never takes an id something still points at.
    assert rheo("ask", "one more about the lighthouse").exit_code == 0
    assert rheo("memory", "add", "Likes tea", "-t", "drink").exit_code == 0
    assert rheo("kb", "add", str(doc)).exit_code == 0
    if table == "memory_items":
        new = db_rows(home, "SELECT min(id) FROM memory_items")[0][0]
        assert new > referenced  # not the id of a lost fact whose history is still there
    assert rheo("doctor").exit_code == 0


def test_io_errors_are_told_apart():
    full = Unavailable("disk I/O error", code="SQLITE_IOERR_WRITE")
    assert database_message(full).endswith("(is the disk full?)")
    short = Unavailable("disk I/O error", code="SQLITE_IOERR_SHORT_READ")
    said = database_message(short)
    assert "disk full" not in said and "-wal" in said and "SQLITE_IOERR_SHORT_READ" in said


@pytest.mark.boundary
def test_a_wal_removed_under_a_running_rheo_loses_nothing(rheo, api, home, monkeypatch):
    """A REPL-like process (one runtime, turn after turn) whose -wal file is removed: the next
    command in another process is told why it cannot read, not "is the disk full?"; the
    running one's next turn puts what it wrote back into the file and opens it again, and
    after that both processes' turns are kept."""
    from rheo_cli.app import app as runtime
    from rheo_cli.turn.wiring import make_assistant

    api.default = text("ok")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    rt = runtime.build()
    assistant = make_assistant(rt)
    try:
        assistant.turn("first, before the removal")
        (home / "rheo.db-wal").unlink()
        other = _run(api, home, "ask", "from another process, meanwhile")
        assert other.returncode == 0, other.stderr  # answered, said unstored, and why
        assert "disk full" not in other.stderr
        assert "its -wal file was removed while another rheo had it open" in other.stderr
        assert "this exchange was not stored" in other.stderr
        assistant.turn("second, after the removal")
        assert any("-wal file was removed" in note for note in assistant.repairs)
        later = _run(api, home, "ask", "from another process, later")
        assert later.returncode == 0 and later.stderr == "", later.stderr
        assistant.turn("third")
    finally:
        rt.close()
    gc.collect()
    asked = [r[0] for r in db_rows(home, "SELECT content FROM turns WHERE role = 'user'")]
    assert asked == [
        "first, before the removal",
        "second, after the removal",
        "from another process, later",
        "third",
    ]
    assert db_rows(home, "PRAGMA integrity_check")[0][0] == "ok"
