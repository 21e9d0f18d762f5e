"""Continuity after any gap: the first message of a new session sees how the
last one ended — its digest, or, until the digest exists (or when every model is down), its
last turns under EPISODIC MEMORY. Sessions closed by time alone get their digest job whenever
rheo runs, without a next turn or ``rheo maintain``."""

from __future__ import annotations

import io
import json
import threading
import time
from datetime import datetime, timedelta

import pytest
from fakeapi import text
from fakeprovider import Canned, api_error
from helpers import api_env, db_rows, request_text, route, run_rheo

from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store import db
from rheo_cli.memory.store.timeutil import to_stored

T10 = datetime.fromisoformat("2026-11-30T10:00:00+01:00")
T15 = T10 + timedelta(hours=5)
PLAN = "Let's plan the Nutrifax invoice: send it on Friday, then chase payment on the 15th."
ANSWER = "Agreed: the Nutrifax invoice goes out Friday, and we chase payment on the 15th."
DIGEST = "Planned the Nutrifax invoice: send it Friday, chase payment on the 15th."


def at(monkeypatch, when: datetime) -> None:
    monkeypatch.setenv("RHEO_NOW", when.isoformat())


def episodic(info: dict) -> str:
    found = [s["text"] for s in info["sections"] if s["name"] == "EPISODIC MEMORY"]
    return found[0] if found else ""


def where_were_we(rheo) -> dict:
    result = rheo("context", "So where were we?", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_after_a_break_the_last_turns_are_injected_while_the_digest_model_is_down(
    rheo, fake_model, monkeypatch
):
    route(
        fake_model,
        chat=ANSWER,
        digest=Canned(error=api_error(529, "overloaded_error", "Overloaded")),
    )
    at(monkeypatch, T10)
    assert rheo("ask", PLAN).exit_code == 0
    at(monkeypatch, T15)
    info = where_were_we(rheo)
    shown = episodic(info)
    assert "End of the previous session" in shown
    assert f"[2026-11-30 10:00] user: {PLAN}" in shown  # dated in local time
    assert f"[2026-11-30 10:00] assistant: {ANSWER}" in shown
    assert info["session_id"] != 1  # the message opens a new session
    # A preview stores nothing, not even the closed session's digest job.
    assert db_rows_home(monkeypatch, "SELECT count(*) FROM jobs WHERE kind='digest'")[0][0] == 0
    # Every model down: the digest job `maintain` queues fails, and stays queued for later;
    # the end of the session stays injected.
    assert rheo("maintain").exit_code == 0
    jobs = db_rows_home(monkeypatch, "SELECT kind, ref_id, status FROM jobs WHERE kind='digest'")
    assert [tuple(r) for r in jobs] == [("digest", 1, "pending")]
    assert db_rows_home(monkeypatch, "SELECT count(*) FROM digests")[0][0] == 0
    assert PLAN in episodic(where_were_we(rheo))
    # The next message, sent for real, carries it too.
    assert rheo("ask", "So where were we?").exit_code == 0
    chat = [r for r in fake_model.requests if "So where were we?" in request_text(r)]
    assert PLAN in request_text(chat[-1])


def db_rows_home(monkeypatch, sql: str):
    import os
    from pathlib import Path

    return db_rows(Path(os.environ["RHEO_HOME"]), sql)


@pytest.mark.boundary
def test_once_the_digest_exists_it_replaces_the_last_turns(rheo, api, monkeypatch, home):
    route(api, chat=text(ANSWER), digest=text(json.dumps({"narrative": DIGEST, "facts": []})))
    at(monkeypatch, T10)
    assert rheo("ask", PLAN).exit_code == 0
    # Nothing else runs until 15:00: the worker itself finds the closed session and digests it.
    env = api_env(api, home, RHEO_NOW=T15.isoformat(), RHEO_WORKER="off")
    worker = run_rheo_worker(env)
    assert worker.returncode == 0, worker.stderr.decode()
    assert [r[0] for r in db_rows(home, "SELECT narrative FROM digests")] == [DIGEST]
    at(monkeypatch, T15)
    shown = episodic(where_were_we(rheo))
    assert f"[2026-11-30 10:00] {DIGEST}" in shown
    assert "End of the previous session" not in shown and PLAN not in shown


def run_rheo_worker(env):
    import subprocess
    import sys

    import netguard
    from helpers import REPO

    return subprocess.run(
        [sys.executable, "-m", "rheo_cli.app.worker_process", "--worker"],
        env=netguard.subprocess_env(env),
        capture_output=True,
        timeout=60,
        cwd=str(REPO),
    )


@pytest.mark.boundary
def test_context_at_15_shows_the_turns_then_the_spawned_worker_writes_the_digest(api, home):
    """End to end in subprocesses with the default worker (spawned after the reply)."""
    route(api, chat=text(ANSWER), digest=text(json.dumps({"narrative": DIGEST, "facts": []})))
    asked = run_rheo("ask", PLAN, env=api_env(api, home, RHEO_NOW=T10.isoformat()))
    assert asked.returncode == 0, asked.stderr.decode()
    later = api_env(api, home, RHEO_NOW=T15.isoformat())
    shown = run_rheo("context", "So where were we?", env=later)
    assert shown.returncode == 0, shown.stderr.decode()
    out = shown.stdout.decode()
    assert "End of the previous session" in out and PLAN in out
    assert run_rheo("ask", "So where were we?", env=later).returncode == 0
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not db_rows(home, "SELECT 1 FROM digests"):
        time.sleep(0.1)
    out = run_rheo("context", "anything else?", env=later).stdout.decode()
    assert DIGEST in out


def test_repl_left_open_across_the_gap_sees_the_morning(fake_model, home):
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from rheo_cli.app import app as runtime
    from rheo_cli.repl.app import run_repl

    route(
        fake_model,
        chat=ANSWER,
        digest=Canned(error=api_error(529, "overloaded_error", "Overloaded")),
    )
    clock = {"now": T10}
    out = io.StringIO()
    with create_pipe_input() as pipe:
        rt = runtime.build()
        rt.clock = lambda: clock["now"]
        assert rt.conn is not None  # the store exists before the REPL starts
        runner = threading.Thread(
            target=run_repl,
            args=(rt,),
            kwargs={"input": pipe, "output": DummyOutput(), "out": out, "rendered": False},
        )
        runner.start()
        try:
            pipe.send_text(PLAN + "\r")
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and len(db_rows(home, "SELECT id FROM turns")) < 2:
                time.sleep(0.05)
            clock["now"] = T15  # the person comes back to the same window five hours later
            pipe.send_text("So where were we?\r\x04")
            runner.join(30)
        finally:
            rt.close()
    assert not runner.is_alive()
    last = [r for r in fake_model.requests if "So where were we?" in request_text(r)][-1]
    sent = "".join(b["text"] for b in last.messages[0]["content"])
    assert "=== EPISODIC MEMORY ===" in sent
    assert f"[2026-11-30 10:00] user: {PLAN}" in sent
    assert "=== CURRENT SESSION ===" not in sent
    sessions = [r[0] for r in db_rows(home, "SELECT session_id FROM turns ORDER BY id")]
    assert sessions == [1, 1, 2, 2]


def test_the_previous_end_keeps_to_its_share_and_keeps_the_newest_turns(tmp_path):
    from rheo_cli.memory.context import assemble
    from rheo_cli.memory.store.settings import Settings

    conn = db.open_store(tmp_path / "s.db")
    s = Settings()
    first = None
    for n in range(30):
        turn = ledger.append_turn(
            conn,
            profile="default",
            role="user",
            content=f"point {n}: " + "words " * 40,
            now=T10 + timedelta(minutes=n),
            gap_s=s.gap_s,
        ).turn
        first = first or turn
    ctx = assemble.assemble(
        conn,
        profile="default",
        message="hello",
        now=T15 + timedelta(hours=1),
        settings=s,
        budget=2000,
    )
    section = ctx.section("EPISODIC MEMORY")
    assert section is not None
    text_ = section.render()
    assert "point 29:" in text_  # the very end is there
    assert "point 0:" not in text_  # not the whole session
    shown = [ln for ln in text_.splitlines() if ln.startswith("[")]
    assert 0 < len(shown) <= 12
    assert section.tokens <= 0.25 * 2000
    conn.close()


def test_importing_past_history_does_not_break_continuity(rheo, fake_model, monkeypatch, home):
    from pathlib import Path

    chatgpt = Path(__file__).resolve().parent.parent / "data" / "chatgpt_conversations.json"
    route(fake_model, chat=ANSWER)
    at(monkeypatch, T10)
    assert rheo("ask", PLAN).exit_code == 0
    imported = rheo("import-history", "chatgpt", str(chatgpt))
    assert imported.exit_code == 0 and "imported 0" not in imported.stdout, imported.output
    at(monkeypatch, T10 + timedelta(seconds=40))
    assert rheo("ask", "And the reminder?").exit_code == 0
    own = db_rows(home, "SELECT DISTINCT session_id FROM turns WHERE source_key IS NULL")
    assert len(own) == 1  # the ask seconds later stayed in today's session
    info = where_were_we(rheo)
    assert info["session_id"] == own[0][0]
    assert "End of the previous session" not in episodic(info)
    recent = json.loads(rheo("history", "recent", "-n", "2", "--json").stdout)
    assert [t["content"] for t in recent] == ["And the reminder?", ANSWER]


def test_a_session_continued_after_its_digest_shows_what_the_digest_does_not_cover(tmp_path):
    """A session digested, then continued (``rheo ask --session N``) and left again: the next
    session sees the digest and, after it, the turns the digest was written before."""
    from rheo_cli.memory.context import assemble
    from rheo_cli.memory.ledger.digests import store_digest
    from rheo_cli.memory.store.settings import Settings

    conn = db.open_store(tmp_path / "s.db")
    s = Settings()

    def say(text_: str, when: datetime, session_id: int | None = None) -> int:
        return ledger.append_turn(
            conn, profile="default", role="user", content=text_, now=when, gap_s=s.gap_s,
            session_id=session_id,
        ).turn.session_id  # fmt: skip

    first = say("alpha: booked the dentist for Tuesday", T10)
    store_digest(
        conn, profile="default", session_id=first, narrative="Booked the dentist.", facts=[],
        procedures=[], decisions=[], source_turn_ids=[1], model="m", created_at=to_stored(T15),
    )  # fmt: skip
    assert say("gamma: moved the dentist to Thursday", T15, session_id=first) == first
    ctx = assemble.assemble(
        conn, profile="default", message="hello", now=T15 + timedelta(hours=5), settings=s,
        budget=2000,
    )  # fmt: skip
    section = ctx.section("EPISODIC MEMORY")
    assert section is not None
    shown = section.render()
    assert "Booked the dentist." in shown
    assert "after its digest" in shown and "gamma: moved the dentist to Thursday" in shown
    assert "alpha: booked" not in shown  # what the digest covers is not repeated
    conn.close()
