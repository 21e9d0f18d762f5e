"""Memory is an enhancement, not a dependency: when part of the store cannot be read, `rheo ask`
and the REPL still answer with what can be read, say so in one line, and store the turn; `rheo
doctor` finds the damage and `--repair` rebuilds indexes without touching the ledger."""

from __future__ import annotations

import io
import json
import os
import sqlite3

import pytest
from fakeapi import text
from fakeprovider import FakeProvider, facts
from helpers import db_rows, facts_reply, route
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from rheo_cli.app import app as runtime
from rheo_cli.memory.store.sqlite import health
from rheo_cli.repl.app import run_repl

DAMAGE = {
    "turns index corrupt": "UPDATE turns_fts_data SET block = x'0102030405' WHERE id > 10",
    "turns index missing": "DROP TABLE turns_fts",
    "trigram index corrupt": "UPDATE turns_cjk_data SET block = x'0102030405' WHERE id > 10",
    "items index corrupt": "UPDATE memory_items_fts_data SET block = x'0102030405' WHERE id > 10",
    "items index missing": "DROP TABLE memory_items_fts",
    "digests index missing": "DROP TABLE digests_fts",
    "items table missing": "DROP TABLE memory_items",
    "digests table missing": "DROP TABLE digests",
    "corrupt item row": "UPDATE memory_items SET reinforced_at = 'not a time'",
    "corrupt digest row": (
        "DROP TRIGGER digests_no_update; UPDATE digests SET ended_at = 'garbage', facts = '[oops'"
    ),
    "sessions table missing": "DROP TABLE sessions",
}


SAID = {
    "turns index corrupt": "(database disk image is malformed); rebuilt turns_fts from the",
    "turns index missing": "(no such table: turns_fts); rebuilt turns_fts from the stored rows",
    "trigram index corrupt": "(database disk image is malformed); rebuilt turns_cjk from the",
    "items index corrupt": "(database disk image is malformed); rebuilt memory_items_fts from",
    "items index missing": "(no such table: memory_items_fts); rebuilt memory_items_fts from",
    "digests index missing": "(no such table: digests_fts); rebuilt digests_fts from the stored",
    "items table missing": (
        "memory partly unreadable (current memory, relevant history, current session:"
    ),
    "digests table missing": "memory partly unreadable (episodic memory, relevant history:",
    "corrupt item row": "memory partly unreadable (current memory:",
    "corrupt digest row": "memory partly unreadable (episodic memory:",
}
"""What the one note line says for each damage."""


def _seed(rheo, model, monkeypatch):
    """Two sessions with turns (one in Chinese), a memory item and a digest; ``model`` is the
    in-process fake model, or the fake API of a boundary test."""
    if isinstance(model, FakeProvider):
        chat, extract = (
            "Noted.",
            facts({"topic": "city", "label": "Lives in Porto", "confidence": 0.9}),
        )
    else:
        chat = text("Noted.")
        extract = facts_reply({"topic": "city", "label": "Lives in Porto", "confidence": 0.9})
    route(model, chat=chat, extract=extract)
    monkeypatch.setenv("RHEO_NOW", "2026-03-03T10:00:00+00:00")
    assert rheo("ask", "I live in Porto and like trains.").exit_code == 0
    assert rheo("ask", "我喜欢火车").exit_code == 0
    monkeypatch.setenv("RHEO_NOW", "2026-03-04T10:00:00+00:00")
    assert rheo("ask", "Good morning, Porto again.").exit_code == 0
    assert rheo("maintain").exit_code == 0
    monkeypatch.setenv("RHEO_NOW", "2026-03-04T10:05:00+00:00")


def _damage(home, sql):
    conn = sqlite3.connect(home / "rheo.db")
    conn.executescript(sql)
    conn.close()


def _ledger(home):
    return [tuple(r) for r in db_rows(home, "SELECT id, role, content FROM turns ORDER BY id")]


@pytest.mark.parametrize("case", list(DAMAGE))
def test_ask_answers_through_damage_and_says_so_once(rheo, fake_model, home, monkeypatch, case):
    _seed(rheo, fake_model, monkeypatch)
    assert db_rows(home, "SELECT count(*) FROM memory_items")[0][0] == 1
    assert db_rows(home, "SELECT count(*) FROM digests")[0][0] == 1
    before = _ledger(home)
    _damage(home, DAMAGE[case])
    fake_model.requests.clear()
    result = rheo("ask", "Which city do I like, Porto trains 我喜欢火车?")
    if case == "sessions table missing":
        # the ledger itself cannot be written: the reply still comes, with what can be read
        # (the session's turns cannot), said unstored; nothing half stored
        assert result.exit_code == 0, result.stderr
        assert result.stdout == "Noted.\n"
        assert result.stderr.strip().splitlines() == [
            "rheo: note: memory partly unreadable (episodic memory, relevant history, current "
            "session: no such table: sessions); answering with what could be read; 'rheo "
            "doctor' checks the store",
            "rheo: note: this exchange was not stored: database error: no such table: sessions",
        ]
        asked = "".join(p["text"] for p in fake_model.last.messages[-1]["content"])
        assert "Lives in Porto" in asked.split("\n---\n")[0]  # current memory was read
        assert _ledger(home) == before
        return
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Noted.\n"
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rheo: note: "), result.stderr
    assert SAID[case] in lines[0], lines[0]
    after = _ledger(home)
    assert after[: len(before)] == before  # the ledger's content untouched
    assert [r[1:] for r in after[len(before) :]] == [
        ("user", "Which city do I like, Porto trains 我喜欢火车?"),
        ("assistant", "Noted."),
    ]


def test_repl_answers_through_a_missing_table(fake_model, home, rheo, monkeypatch):
    _seed(rheo, fake_model, monkeypatch)
    _damage(home, DAMAGE["items table missing"])
    out = io.StringIO()
    rt = runtime.build()
    with create_pipe_input() as pipe:
        pipe.send_text("what do you know?\r\x04")
        try:
            run_repl(rt, input=pipe, output=DummyOutput(), out=out, rendered=False)
        finally:
            rt.close()
    notes = [ln for ln in out.getvalue().splitlines() if ln.startswith("rheo: note:")]
    assert len(notes) == 1 and "current memory" in notes[0], out.getvalue()
    assert "Noted." in out.getvalue()
    assert _ledger(home)[-2][1:] == ("user", "what do you know?")


def _full_disk():
    """In the child: the filesystem refuses to write any file past 4 KiB (EFBIG, as SQLite
    sees a full disk), without killing the process. 4 KiB, not more: after a checkpoint the
    WAL is written again from its start, and a larger limit would let a small transaction
    through."""
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


@pytest.mark.boundary
def test_background_work_on_a_full_disk_fails_cleanly_and_the_chat_goes_on(
    rheo, api, home, monkeypatch
):
    import subprocess
    import sys

    import netguard
    from helpers import REPO, api_env

    _seed(rheo, api, monkeypatch)
    route(
        api,
        chat=text("Noted."),
        extract=facts_reply(
            *[{"topic": f"hobby {n}", "label": f"Likes hobby {n} " + "x" * 300} for n in range(3)]
        ),
    )
    assert rheo("ask", "One more thing about my hobbies.").exit_code == 0
    assert (home / "rheo.db").stat().st_size > 65536
    before = db_rows(home, "SELECT id, status, attempts FROM jobs ORDER BY id")
    env = netguard.subprocess_env(api_env(api, home, RHEO_WORKER="off"))
    for args in (["-m", "rheo_cli", "maintain"], ["-m", "rheo_cli.app.worker_process", "--worker"]):
        proc = subprocess.run(
            [sys.executable, *args],
            env=env,
            cwd=str(REPO),
            capture_output=True,
            timeout=60,
            preexec_fn=_full_disk,
        )
        assert b"Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert db_rows(home, "PRAGMA integrity_check")[0][0] == "ok"
    assert [
        tuple(r) for r in db_rows(home, "SELECT id, status, attempts FROM jobs ORDER BY id")
    ] == [tuple(r) for r in before]  # nothing half written, nothing counted
    result = rheo("ask", "Still there?")
    assert result.exit_code == 0 and result.stdout == "Noted.\n", result.stderr
    assert rheo("maintain").exit_code == 0  # with room again, the work is done
    assert db_rows(home, "SELECT count(*) FROM memory_items")[0][0] == 4


def _doctor(rheo, *args):
    out = rheo("doctor", "--json", *args)
    return out.exit_code, json.loads(out.stdout)


def test_doctor_is_healthy_on_a_sound_store(rheo, fake_model, home, monkeypatch):
    _seed(rheo, fake_model, monkeypatch)
    code, report = _doctor(rheo)
    assert code == 0 and report["healthy"], report
    names = {c["name"] for c in report["checks"]}
    assert {"config", "api key", "permissions", "schema", "integrity", "tables"} <= names
    assert {"search indexes", "jobs"} <= names
    assert "test-key" not in json.dumps(report)


@pytest.mark.parametrize(
    "case",
    [
        "turns index corrupt",
        "turns index missing",
        "items index corrupt",
        "trigram index corrupt",
        "digests index missing",
    ],
)
def test_doctor_finds_and_repair_rebuilds_damaged_indexes(
    rheo, fake_model, home, monkeypatch, case
):
    _seed(rheo, fake_model, monkeypatch)
    ledger = _ledger(home)
    _damage(home, DAMAGE[case])
    code, report = _doctor(rheo)
    assert code == 1 and not report["healthy"]
    bad = [c for c in report["checks"] if not c["ok"]]
    assert [c["name"] for c in bad] == ["search indexes"], bad
    code, report = _doctor(rheo, "--repair")
    assert code == 0, report
    assert any("rebuilt" in r for r in report["repaired"])
    assert _ledger(home) == ledger
    found = rheo("history", "search", "trains", "--json")
    assert found.exit_code == 0 and "trains" in found.stdout
    assert "火车" in rheo("history", "search", "火车", "--json").stdout


def test_doctor_reports_loose_permissions_failed_jobs_and_a_missing_key(
    rheo, fake_model, home, monkeypatch
):
    _seed(rheo, fake_model, monkeypatch)
    os.chmod(home / "rheo.db", 0o644)
    conn = sqlite3.connect(home / "rheo.db")
    conn.execute("UPDATE jobs SET status = 'failed', last_error = 'x' WHERE id = 1")
    conn.commit()
    conn.close()
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    result = rheo("doctor")
    assert result.exit_code == 1
    assert "PROBLEM   permissions:" in result.stdout and "0644" in result.stdout
    assert "PROBLEM   jobs: 0 pending, 1 failed" in result.stdout
    assert "PROBLEM   api key:" in result.stdout
    assert result.stderr.strip() == "rheo: 3 problems: api key, permissions, jobs"
    code, report = _doctor(rheo, "--repair")
    assert oct(os.stat(home / "rheo.db").st_mode & 0o777) == "0o600"
    assert {c["name"] for c in report["checks"] if not c["ok"]} == {"api key", "jobs"}


def test_doctor_repair_queues_missing_digests(rheo, fake_model, home, monkeypatch):
    _seed(rheo, fake_model, monkeypatch)
    conn = sqlite3.connect(home / "rheo.db")
    conn.execute("DELETE FROM jobs WHERE kind = 'digest'")
    conn.execute("DROP TRIGGER digests_no_delete")
    conn.execute("DELETE FROM digests")
    conn.commit()
    conn.close()
    code, report = _doctor(rheo, "--repair")
    assert "queued 1 missing digest" in report["repaired"]
    assert db_rows(home, "SELECT count(*) FROM jobs WHERE kind = 'digest'")[0][0] == 1


def test_doctor_reports_a_newer_schema_and_an_unreadable_config(
    rheo, fake_model, home, monkeypatch
):
    _seed(rheo, fake_model, monkeypatch)
    conn = sqlite3.connect(home / "rheo.db")
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    (home / "config.toml").write_text("model = [broken\n")
    code, report = _doctor(rheo)
    bad = {c["name"]: c["detail"] for c in report["checks"] if not c["ok"]}
    assert code == 1 and "newer than this rheo" in bad["database"] and "config" in bad


def test_fts_checks_pass_on_a_fresh_and_a_repaired_store(tmp_path):
    from rheo_cli.memory.store import db

    conn = db.open_store(tmp_path / "x.db")
    assert health.fts_problems(conn) == {} and health.missing_tables(conn) == []
    conn.execute("DROP TABLE turns_cjk")
    assert health.fts_problems(conn) == {"turns_cjk": "missing"}
    health.rebuild_indexes(conn)
    assert health.fts_problems(conn) == {}


def test_doctor_finds_and_repair_recounts_a_session_whose_counters_are_stale(
    rheo, fake_model, home, monkeypatch
):
    _seed(rheo, fake_model, monkeypatch)
    ledger = _ledger(home)
    conn = sqlite3.connect(home / "rheo.db")
    conn.execute("UPDATE sessions SET turns = turns - 1, last_turn_at = started_at")
    conn.commit()
    conn.close()
    code, report = _doctor(rheo)
    assert code == 1
    bad = [c for c in report["checks"] if not c["ok"]]
    assert [c["name"] for c in bad] == ["sessions"], bad
    assert "--repair" in bad[0]["detail"]
    code, report = _doctor(rheo, "--repair")
    assert code == 0, report
    assert any("recounted" in r for r in report["repaired"])
    assert _ledger(home) == ledger
    turns = db_rows(home, "SELECT count(*), max(ts) FROM turns")[0]
    assert tuple(db_rows(home, "SELECT sum(turns), max(last_turn_at) FROM sessions")[0]) == (
        turns[0], turns[1],
    )  # fmt: skip
