"""``rheo doctor`` reports the resident — off, not running, running (pid, uptime, requests
served, work processes running), a socket file nobody listens on, a run folder others can read,
the log's last error — in its text and JSON, and never starts one."""

from __future__ import annotations

import json
import os
import re
import socket
import time

import pytest
from fakeapi import text
from helpers import facts_reply, route

from rheo_cli.resident import control, launch, protocol


@pytest.fixture
def on(monkeypatch: pytest.MonkeyPatch, api) -> None:
    """doctor in this process, the resident on, a provider configured."""
    monkeypatch.setenv("RHEO_RESIDENT", "1")


def _doctor(rheo) -> tuple[int, str, dict]:
    """doctor's exit status, its text line about the resident, and its JSON check."""
    shown = rheo("doctor")
    lines = [ln for ln in shown.stdout.splitlines() if " resident: " in ln]
    assert len(lines) == 1, shown.stdout
    report = rheo("doctor", "--json")
    assert report.exit_code == shown.exit_code
    checks = [c for c in json.loads(report.stdout)["checks"] if c["name"] == "resident"]
    assert len(checks) == 1
    same = f"{'ok' if checks[0]['ok'] else 'PROBLEM':<9} resident: {checks[0]['detail']}"
    assert _no_uptime(lines[0]) == _no_uptime(same)  # the same line, a moment later
    return shown.exit_code, lines[0], checks[0]


def _no_uptime(line: str) -> str:
    return re.sub(r" for [\d.]+ \w+,", " for …,", line)


def test_not_running_and_doctor_starts_none(rheo, home, on):
    code, line, check = _doctor(rheo)
    assert code == 0 and check["ok"]
    assert check["detail"].startswith("not running (")
    assert line.startswith("ok        resident: not running")
    time.sleep(1.5)  # a resident started on the way would have made its folder by now
    assert not os.path.exists(protocol.run_dir(str(home)))
    assert not launch.running(str(home))


def test_off(rheo, home, on, monkeypatch):
    monkeypatch.setenv("RHEO_RESIDENT", "0")
    code, _, check = _doctor(rheo)
    assert code == 0 and check["ok"] and check["detail"].startswith("off (")


def test_running_with_its_requests_and_work_processes(rheo, home, on, resident, api, monkeypatch):
    pid = resident.pid()
    code, line, check = _doctor(rheo)
    assert code == 0 and check["ok"], check
    assert re.fullmatch(
        rf"running as pid {pid} for \d+ s, 0 requests served, 0 work processes running",
        check["detail"],
    ), check["detail"]
    api.default = text("ok")
    assert resident.run("ask", "hello").returncode == 0
    route(api, chat=text("Porto is lovely."), extract=facts_reply())
    assert rheo("ask", "I live in Porto").exit_code == 0  # RHEO_WORKER=off: the job waits
    from rheo_cli.app import app as runtime
    from rheo_cli.background import worker

    monkeypatch.delenv("RHEO_WORKER")
    with runtime.build() as rt:
        assert worker.hand_to_resident(rt)  # its process then waits for the session to close
    _, _, check = _doctor(rheo)
    assert re.search(r"1 request served, 1 work process running$", check["detail"]), check


def test_a_socket_nobody_listens_on_is_harmless(rheo, home, on):
    folder = protocol.ensure_run_dir(str(home))
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(os.path.join(folder, protocol.SOCKET_NAME))
    stale.close()  # the file stays, nobody listens
    os.chmod(os.path.join(folder, protocol.SOCKET_NAME), 0o600)  # as a resident leaves it
    code, _, check = _doctor(rheo)
    assert code == 0 and check["ok"], check
    assert check["detail"].startswith("not running; ")
    assert "harmless" in check["detail"] and "replaces it" in check["detail"]
    assert not launch.running(str(home))


def test_a_run_folder_others_can_read_is_a_problem(rheo, home, on):
    folder = protocol.ensure_run_dir(str(home))
    os.chmod(folder, 0o755)
    code, line, check = _doctor(rheo)
    assert code == 1 and not check["ok"]
    assert f"{folder} is 0755, should be 0700" in check["detail"]
    assert line.startswith("PROBLEM   resident: not running")
    assert rheo("doctor", "--repair").exit_code == 0  # made private with the other files
    code, _, check = _doctor(rheo)
    assert code == 0 and check["ok"] and "0700" not in check["detail"]


def test_the_logs_last_error_line_is_shown_redacted(rheo, home, on):
    folder = protocol.ensure_run_dir(str(home))
    log = os.path.join(folder, protocol.LOG_NAME)
    with open(log, "w") as handle:
        handle.write(
            "Traceback (most recent call last):\n"
            '  File "x.py", line 1, in <module>\n'
            "OSError: [Errno 28] No space left on device\n"
            "rheo worker: cannot reach sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345\n"
            "some note that is not an error\n"
        )
    os.chmod(log, 0o600)
    code, _, check = _doctor(rheo)
    assert code == 0 and check["ok"], check
    assert "; last error in resident.log: rheo worker: cannot reach " in check["detail"]
    assert "abcdefghijklmnopqrstuvwxyz" not in check["detail"]


def test_the_logs_error_line_hides_configured_and_environment_secrets(rheo, home, on, monkeypatch):
    folder = protocol.ensure_run_dir(str(home))
    log = os.path.join(folder, protocol.LOG_NAME)
    token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
    (home / "config.toml").write_text(f'[telegram]\ntoken = "{token}"\n')
    os.chmod(home / "config.toml", 0o600)
    for last in (
        f"httpx.ConnectError: https://api.telegram.org/bot{token}/getUpdates",
        "telegram.error.InvalidToken: the token Bot9Zp-private-token-value was rejected",
        "ValueError: bad header value mycustomproxykey0123456789",
    ):
        with open(log, "w") as handle:
            handle.write(f'Traceback (most recent call last):\n  File "x.py", line 1\n{last}\n')
        os.chmod(log, 0o600)
        monkeypatch.setenv("RHEO_TELEGRAM_TOKEN", "Bot9Zp-private-token-value")
        monkeypatch.setenv("ANTHROPIC_API_KEY", "mycustomproxykey0123456789")
        _, line, check = _doctor(rheo)
        assert "last error in resident.log: " + last.split(":")[0] in check["detail"], check
        for secret in (token, "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw", "Bot9Zp-private-token-value"):
            assert secret not in check["detail"] and secret not in line
        assert "mycustomproxykey0123456789" not in check["detail"]


def test_stop_ends_a_session_watcher_an_earlier_resident_left(rheo, home, on):
    import subprocess
    import sys

    folder = protocol.ensure_run_dir(str(home))
    lock = os.path.join(folder, "watch-default.lock")
    hold = (
        "import fcntl, os, sys, time; import rheo_cli; "
        f"fd = os.open({lock!r}, os.O_RDWR | os.O_CREAT, 0o600); "
        "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, b'%d\\n' % os.getpid()); "
        "print('held', flush=True); time.sleep(600)"
    )
    orphan = subprocess.Popen([sys.executable, "-c", hold], stdout=subprocess.PIPE, text=True)
    try:
        assert orphan.stdout is not None and orphan.stdout.readline() == "held\n"
        _, line, check = _doctor(rheo)
        assert f"session watcher an earlier resident left runs as pid {orphan.pid}" in line
        said = control.stop(str(home))  # what `rheo resident stop` prints
        assert said.startswith("resident: not running; ended the session watcher")
        assert str(orphan.pid) in said
        assert orphan.wait(timeout=10) != 0
    finally:
        if orphan.poll() is None:
            orphan.kill()
            orphan.wait()
