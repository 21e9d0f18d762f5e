"""The memory work after a reply goes to the running resident: a REPL turn and a Telegram
message hand it over (no worker process is started) and the resident's process extracts with
the command's own environment; without a resident of this build, or with the resident off,
the worker starts as a process as before; the resident's watcher wakes for a job waiting for
its retry."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fakeapi import text
from helpers import REPO, db_rows, facts_reply, kind_of, mcp_initialize, route

from rheo_cli.background import worker
from rheo_cli.resident import launch, protocol

PORTO = {"topic": "city", "label": "Lives in Porto", "confidence": 0.9}


@pytest.fixture
def spawned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The profiles a detached worker process was started for (none is: recorded instead)."""
    found: list[str] = []
    monkeypatch.setattr(worker, "spawn", lambda rt: found.append(rt.profile))
    return found


@pytest.fixture
def resident_on(resident, monkeypatch: pytest.MonkeyPatch):
    """This process as a command of the resident's home: the resident on, the worker in its
    default mode (spawn: handed to the resident when one runs)."""
    monkeypatch.setenv("RHEO_RESIDENT", "1")
    monkeypatch.delenv("RHEO_WORKER", raising=False)
    resident.env.pop("RHEO_WORKER")
    return resident


def _wait_for(check, deadline_s: float = 90.0):
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    return check()


def _labels(home: Path) -> list[str]:
    try:
        return [r["label"] for r in db_rows(home, "SELECT label FROM memory_items")]
    except sqlite3.OperationalError:  # no table yet
        return []


def _repl_turn(line: str) -> str:
    """Run the REPL in this process (as tests/repl do), send ``line``, then Ctrl-D."""
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from rheo_cli.app import app as runtime
    from rheo_cli.repl.app import run_repl

    out = io.StringIO()
    with create_pipe_input() as pipe:
        pipe.send_text((line + "\r" if line else "") + "\x04")
        rt = runtime.build()
        try:
            run_repl(rt, input=pipe, output=DummyOutput(), out=out, rendered=False)
        finally:
            rt.close()
    return out.getvalue()


def test_a_repl_turn_hands_its_memory_work_to_the_resident(resident_on, api, home, spawned):
    before = resident_on.ready()
    route(api, chat=text("Porto is lovely."), extract=facts_reply(PORTO))
    assert "Porto is lovely." in _repl_turn("I live in Porto")
    assert _wait_for(lambda: _labels(home)) == ["Lives in Porto"]
    assert spawned == []  # no worker process
    assert not (home / "worker.log").exists()
    jobs = db_rows(home, "SELECT kind, status, leased_by FROM jobs")
    assert [(j["kind"], j["status"]) for j in jobs] == [("extract", "done")]
    status = resident_on.status()
    assert status["pid"] == before["pid"] and status["handed"] == before["handed"] + 1
    assert status["served"] == before["served"]  # work, not a command
    shown = resident_on.run("resident", "status").stdout
    assert f"memory work handed over {before['handed'] + 1} time" in shown, shown
    extracts = [r for r in api.message_requests if kind_of(r) == "extract"]
    assert len(extracts) == 1 and extracts[0].api_key == "test-key"


def test_an_mcp_session_hands_each_turns_memory_work_over_while_it_lasts(resident_on, api, home):
    """`rheo mcp --log-turns` runs in a process the resident forked: the fact in a logged
    exchange is learnt while the MCP session is still open, not when the client leaves."""
    before = resident_on.ready()
    route(api, extract=facts_reply(PORTO))
    proc = subprocess.Popen(
        [sys.executable, "-m", "rheo_cli", "mcp", "--log-turns"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=resident_on.environ(),
        cwd=str(REPO),
    )
    assert proc.stdin is not None and proc.stdout is not None

    def call(request_id: int, message: dict) -> dict:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": request_id, **message}) + "\n")
        proc.stdin.flush()
        while True:
            answer = json.loads(proc.stdout.readline())
            if answer.get("id") == request_id:
                return answer

    def log(request_id: int, **args: object) -> str:
        params = {"name": "log_turn", "arguments": args}
        answer = call(request_id, {"method": "tools/call", "params": params})
        return str(answer["result"]["content"][0]["text"])

    try:
        assert "result" in call(1, {k: v for k, v in mcp_initialize().items() if k != "id"})
        proc.stdin.write('{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        said = log(2, role="user", content="I live in Porto now.")
        turn = int(said.split("reply_to ")[1].split()[0])
        log(3, role="assistant", content="Porto is lovely.", reply_to=turn)
        assert _wait_for(lambda: _labels(home)) == ["Lives in Porto"]
        assert proc.poll() is None  # learnt while the session is open
        status = resident_on.status()
        assert status is not None and status["handed"] == before["handed"] + 1
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    assert not (home / "worker.log").exists()  # no worker process
    extracts = [r for r in api.message_requests if kind_of(r) == "extract"]
    assert len(extracts) == 1


def test_a_telegram_message_hands_its_memory_work_to_the_resident(
    resident_on, api, home, spawned, rheo, monkeypatch
):
    pytest.importorskip("telegram")
    from faketelegram import TOKEN, FakeTelegram

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[telegram]\nchats = { "4242" = "work" }\n')
    before = resident_on.ready()
    route(api, chat=text("Noted."), extract=facts_reply(PORTO))
    with FakeTelegram() as tg:
        monkeypatch.setenv("RHEO_TELEGRAM_TOKEN", TOKEN)
        monkeypatch.setenv("RHEO_TELEGRAM_API", tg.base_url)
        tg.send_text(4242, "I live in Porto")
        result = rheo("telegram", "--once")
        assert result.exit_code == 0, result.stderr
        assert tg.texts_to(4242) == ["Noted."]
    assert _wait_for(lambda: _labels(home)) == ["Lives in Porto"]
    assert spawned == []
    rows = db_rows(home, "SELECT profile, status FROM jobs")
    assert [(r["profile"], r["status"]) for r in rows] == [("work", "done")]
    assert resident_on.status()["handed"] == before["handed"] + 1


def _kick(**env: str) -> None:
    from rheo_cli.app import app as runtime

    saved = dict(os.environ)
    os.environ.update(env)
    try:
        with runtime.build() as rt:
            worker.kick(rt)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def test_without_a_resident_the_worker_starts_as_a_process(resident_on, api, home, spawned):
    home.mkdir(parents=True, exist_ok=True)
    _kick()
    assert spawned == ["default"]
    assert not os.path.exists(protocol.socket_path(str(home)))  # kick starts no resident
    _kick(RHEO_PROFILE="work")
    assert spawned == ["default", "work"]


def test_with_the_resident_off_or_the_worker_off_nothing_is_handed_over(
    resident_on, api, home, spawned
):
    handed = resident_on.ready()["handed"]
    _kick(RHEO_RESIDENT="0")
    assert spawned == ["default"]
    _kick(RHEO_WORKER="off")
    _kick(RHEO_WORKER="inline")
    assert spawned == ["default"]
    assert resident_on.status()["handed"] == handed
    _kick()
    assert spawned == ["default"] and resident_on.status()["handed"] == handed + 1


def test_a_resident_of_another_build_retires_and_the_worker_starts_as_a_process(
    resident_on, api, home, spawned, monkeypatch
):
    pid = resident_on.pid()
    monkeypatch.setattr(protocol, "stamp", lambda: "another-build")
    _kick()
    assert spawned == ["default"]
    gone = _wait_for(lambda: not os.path.exists(protocol.socket_path(str(home))), 10)
    assert gone, "the resident of another build still listens"
    from helpers import alive

    assert _wait_for(lambda: not alive(pid), 30), "the resident of another build still runs"


def test_the_watcher_wakes_for_a_job_waiting_for_its_retry(api, home, rheo, monkeypatch):
    """The resident's session watcher runs a job whose retry comes after the worker's own
    minute of waiting (in this process: the same function the resident runs)."""
    from rheo_cli.resident.warm import background

    monkeypatch.setenv("RHEO_NOW", "2026-03-02T10:00:00Z")  # no session close to wait for
    route(api, chat=text("Porto is lovely."), extract=facts_reply(PORTO))
    assert rheo("ask", "I live in Porto").exit_code == 0  # RHEO_WORKER=off: the job waits
    conn = sqlite3.connect(home / "rheo.db")
    with conn:
        conn.execute("UPDATE jobs SET not_before = ?", (time.time() + 3,))  # a retry's backoff
    conn.close()
    close_in, job_in = background.seconds_to_wake()
    assert close_in is None and job_in is not None and 1 < job_in <= 3
    protocol.ensure_run_dir(str(home))
    started = time.monotonic()
    background.watch(str(home), "default")
    assert time.monotonic() - started >= 2.5  # it slept until the job was due
    assert db_rows(home, "SELECT status FROM jobs")[0]["status"] == "done"
    assert _labels(home) == ["Lives in Porto"]
    assert background.seconds_to_wake() == (None, None)  # nothing left: the watcher ended


@contextlib.contextmanager
def _as_command(resident) -> Iterator[None]:
    """This process with the environment of a rheo command of the resident's home (the
    network guard included, for the resident it may start)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(resident.environ(RHEO_RESIDENT="1"))
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _started(resident, home: Path) -> int:
    """The pid of the resident that was started (waited for until it answers)."""
    held = _wait_for(lambda: launch.holder(str(home)), 30)
    assert held, "no resident was started"
    resident.pids.add(held[0])
    return int(resident.ready()["pid"])


def test_the_repl_starts_a_resident_as_it_starts(resident_on, api, home, spawned):
    with _as_command(resident_on):
        os.environ["RHEO_RESIDENT"] = "0"
        _repl_turn("")
        assert not os.path.exists(protocol.run_dir(str(home)))  # off: none started
        os.environ["RHEO_RESIDENT"] = "1"
        _repl_turn("")  # nothing typed: Ctrl-D at once
    assert _started(resident_on, home)


def test_the_telegram_bot_starts_a_resident_as_it_starts(resident_on, api, home, spawned):
    pytest.importorskip("telegram")
    import asyncio

    from faketelegram import TOKEN, FakeTelegram

    from rheo_cli.telegram.bot import BotSettings, TelegramBot

    async def serve_until_started(bot: TelegramBot) -> None:
        task = asyncio.create_task(bot.run())
        deadline = time.monotonic() + 30
        while launch.holder(str(home)) is None and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    with FakeTelegram() as tg, _as_command(resident_on):
        settings = BotSettings(TOKEN, {4242: "default"}, base_url=tg.base_url, poll_timeout_s=1)
        bot = TelegramBot(settings, home=home, log=lambda line: None)
        asyncio.run(serve_until_started(bot))
    assert _started(resident_on, home)


def test_telegram_once_starts_no_resident(resident_on, api, home, spawned, rheo, monkeypatch):
    pytest.importorskip("telegram")
    from faketelegram import TOKEN, FakeTelegram

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[telegram]\nchats = { "4242" = "default" }\n')
    with FakeTelegram() as tg:
        monkeypatch.setenv("RHEO_TELEGRAM_TOKEN", TOKEN)
        monkeypatch.setenv("RHEO_TELEGRAM_API", tg.base_url)
        assert rheo("telegram", "--once").exit_code == 0  # cron's one-shot
    time.sleep(1.5)  # a resident started on the way out would have made its folder by now
    assert not os.path.exists(protocol.run_dir(str(home)))


def test_an_answered_ask_whose_process_goes_on_to_its_memory_work_counts_as_work(
    resident_on, api, home
):
    """After the answer, an ask's process runs the turn's extraction and then watches the
    session: `resident status` counts it as a work process, not as a request still running."""
    resident_on.ready()
    route(api, chat=text("Porto is lovely."), extract=facts_reply(PORTO))
    assert resident_on.run("ask", "I live in Porto").returncode == 0
    assert _wait_for(lambda: _labels(home)) == ["Lives in Porto"]
    status = _wait_for(lambda: (s := resident_on.status()) and s["working"] == 1 and s)
    assert status["answering"] == 0 and status["served"] == 1, status
    shown = resident_on.run("resident", "status").stdout
    assert "1 request served, 1 work process running;" in shown, shown
