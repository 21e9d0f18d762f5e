"""The resident's process: only this user may connect, a kill -9 of it or of a request's
process loses nothing, Ctrl-C reaches the request, and it exits when idle."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time

from fakeapi import text
from helpers import alive, db_rows, descendants

from rheo_cli.resident import protocol
from rheo_cli.resident.warm import server

SLOW = text("one two three four five six seven eight", chunks=8, chunk_delay=0.5)


def test_a_peer_of_another_user_is_refused():
    left, right = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with left, right:
        assert server.peer_uid(left) == os.getuid()
        assert server.peer_allowed(left)
        assert not server.peer_allowed(left, uid=os.getuid() + 1)


def _request_process(resident_pid: int, deadline_s: float = 60) -> int:
    """The pid of the process the resident forked for the running request."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        found = descendants(resident_pid)
        if found:
            return min(found)
        time.sleep(0.02)
    raise AssertionError("no request process appeared")


def _wait_for_text(api, deadline_s: float = 60) -> None:
    deadline = time.monotonic() + deadline_s
    while not api.message_requests and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(1.2)  # a few pieces of the reply have gone out


def test_kill_9_of_the_resident_mid_reply_lets_the_answer_finish(resident, api, home):
    pid = resident.pid()
    api.default = SLOW
    ask = resident.start("ask", "count")
    _wait_for_text(api)
    os.kill(pid, signal.SIGKILL)
    out, err = ask.communicate(timeout=120)
    assert (ask.returncode, out) == (0, "one two three four five six seven eight\n"), err
    rows = db_rows(home, "SELECT role, status FROM turns ORDER BY id")
    assert [(r["role"], r["status"]) for r in rows] == [("user", None), ("assistant", "ok")]
    api.default = text("after")
    again = resident.run("ask", "next")  # the socket is stale now: in-process, a new one starts
    assert (again.returncode, again.stdout, again.stderr) == (0, "after\n", "")
    assert resident.ready()["pid"] != pid


def test_kill_9_of_the_request_process_ends_with_one_line_and_the_question_kept(
    resident, api, home
):
    pid = resident.pid()
    api.default = SLOW
    ask = resident.start("ask", "count")
    child = _request_process(pid)
    _wait_for_text(api)
    os.kill(child, signal.SIGKILL)
    out, err = ask.communicate(timeout=60)
    assert ask.returncode == 1
    assert len(err.strip().splitlines()) == 1 and "--retry" in err, err
    assert "Traceback" not in err
    assert out.startswith("one") and not out.endswith("eight\n")  # the part that came
    rows = db_rows(home, "SELECT role, content FROM turns ORDER BY id")
    assert [(r["role"], r["content"]) for r in rows] == [("user", "count")]
    api.default = text("counted")
    retried = resident.run("ask", "--retry")
    assert (retried.returncode, retried.stdout) == (0, "counted\n"), retried.stderr
    rows = db_rows(home, "SELECT role, content FROM turns ORDER BY id")
    assert [r["content"] for r in rows] == ["count", "counted"]


def test_ctrl_c_reaches_the_request_and_the_partial_reply_is_kept(resident, api, home):
    resident.ready()
    api.default = SLOW
    ask = resident.start("ask", "count")
    _wait_for_text(api)
    ask.send_signal(signal.SIGINT)
    out, err = ask.communicate(timeout=60)
    assert ask.returncode == 130, err
    assert "interrupted" in err and "Traceback" not in err
    rows = db_rows(home, "SELECT role, status, content FROM turns ORDER BY id")
    assert [(r["role"], r["status"]) for r in rows] == [
        ("user", None),
        ("assistant", "interrupted"),
    ]
    assert rows[1]["content"] and rows[1]["content"] in "one two three four five six seven eight"


def test_the_resident_exits_when_idle(resident, home):
    (home).mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[resident]\nidle_minutes = 0.05\n")
    pid = resident.pid()
    deadline = time.monotonic() + 60
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(pid)
    assert not os.path.exists(protocol.socket_path(str(home)))


def test_stop_ends_the_resident(resident, home):
    pid = resident.pid()
    result = resident.run("resident", "stop")
    assert (result.returncode, result.stdout) == (0, "resident: stopped\n")
    assert not alive(pid)
    assert resident.run("resident", "status").stdout.startswith("resident: not running")
    assert resident.run("resident", "frobnicate").returncode == 2


def test_idle_connections_do_not_delay_an_ask(resident, api, home):
    served = resident.ready()["served"]
    api.default = text("prompt")
    idle = []
    for _ in range(10):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(protocol.socket_path(str(home)))
        idle.append(sock)
    try:
        started = time.monotonic()
        result = resident.run("ask", "hi")
        took = time.monotonic() - started
    finally:
        for sock in idle:
            sock.close()
    assert (result.returncode, result.stdout) == (0, "prompt\n"), result.stderr
    assert took < 4.0, took  # 10 idle clients once cost 5 s each
    assert resident.status()["served"] == served + 1  # through the resident, not around it


def test_a_resident_that_does_not_answer_leaves_the_ask_to_the_client(resident, api, home):
    pid = resident.pid()
    api.default = text("in-process")
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        ask = resident.start("ask", "hi")
        ask.wait(timeout=60)  # its pipes stay open while the request waits in the socket
        took = time.monotonic() - started
    finally:
        os.kill(pid, signal.SIGCONT)
    out, err = ask.communicate(timeout=60)
    assert (ask.returncode, out) == (0, "in-process\n"), err
    assert took < 90, took  # the client's 5 s wait, then the ask in-process (a busy machine)
    time.sleep(3)  # the resident now forks for the abandoned request: that process stops
    rows = db_rows(home, "SELECT role, content FROM turns ORDER BY id")
    assert [(r["role"], r["content"]) for r in rows] == [
        ("user", "hi"),
        ("assistant", "in-process"),
    ]
    assert len(api.message_requests) == 1
    assert not descendants(pid)


def test_kill_9_of_the_client_interrupts_the_request(resident, api, home):
    pid = resident.pid()
    api.default = SLOW
    ask = resident.start("ask", "count")
    child = _request_process(pid)
    _wait_for_text(api)
    ask.kill()
    ask.communicate(timeout=60)
    deadline = time.monotonic() + 30
    rows: list = []
    while time.monotonic() < deadline:
        rows = db_rows(home, "SELECT role, status, content FROM turns ORDER BY id")
        if len(rows) == 2:
            break
        time.sleep(0.1)
    assert [(r["role"], r["status"]) for r in rows] == [
        ("user", None),
        ("assistant", "interrupted"),
    ]
    assert rows[1]["content"] != "one two three four five six seven eight"
    deadline = time.monotonic() + 30
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(child)  # nothing queued (RHEO_WORKER=off): it ended with the turn


def _watcher(home, deadline_s: float = 60) -> int:
    """The pid written in a session watcher's lock, once one waits."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for lock in (home / "run").glob("watch-*.lock"):
            words = lock.read_text().split()
            if words:
                return int(words[0])
        time.sleep(0.1)
    raise AssertionError("no session watcher appeared")


def test_stop_ends_the_session_watcher_and_the_resident_at_once(resident, api, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[session]\ngap_hours = 1\n")  # a watcher waits 1 h
    resident.env.pop("RHEO_WORKER")
    pid = resident.pid()
    api.default = text("noted")
    assert resident.run("ask", "remember the milk").returncode == 0
    watcher = _watcher(home)
    assert alive(watcher)
    started = time.monotonic()
    stopped = resident.run("resident", "stop")
    assert stopped.stdout == "resident: stopped\n", stopped.stderr
    assert time.monotonic() - started < 10
    assert not alive(pid) and not alive(watcher)
    assert resident.run("resident", "status").stdout.startswith("resident: not running")


def test_a_stopping_resident_finishes_its_request_and_no_second_one_starts(resident, api, home):
    from rheo_cli.resident import launch

    pid = resident.pid()
    api.default = SLOW
    ask = resident.start("ask", "count")
    _wait_for_text(api)
    stopping = resident.start("resident", "stop")
    deadline = time.monotonic() + 10
    while os.path.exists(protocol.socket_path(str(home))) and time.monotonic() < deadline:
        time.sleep(0.05)
    status = resident.run("resident", "status").stdout
    assert status.startswith(f"resident: stopping (pid {pid}"), status
    assert not launch.start(str(home))  # the lock is still held: no second resident
    out, err = ask.communicate(timeout=60)
    assert (ask.returncode, out) == (0, "one two three four five six seven eight\n"), err
    said, _ = stopping.communicate(timeout=60)
    assert said == "resident: stopped\n"
    assert not alive(pid)
    rows = db_rows(home, "SELECT role, status FROM turns ORDER BY id")
    assert [(r["role"], r["status"]) for r in rows] == [("user", None), ("assistant", "ok")]


def test_stop_of_a_resident_still_starting_ends_it(resident, home):
    from rheo_cli.resident import launch

    with_env = resident.environ()
    saved = dict(os.environ)
    os.environ.update(with_env)
    try:
        assert launch.start(str(home))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    deadline = time.monotonic() + 10
    while launch.holder(str(home)) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    held = launch.holder(str(home))
    assert held is not None
    resident.pids.add(held[0])
    stopped = resident.run("resident", "stop")
    assert stopped.stdout == "resident: stopped\n", (held, stopped.stdout)
    assert not alive(held[0])
    assert resident.run("resident", "status").stdout.startswith("resident: not running")


def test_an_mcp_session_ends_when_its_client_is_killed_though_the_host_keeps_the_pipes(
    resident, home
):
    """`rheo mcp` killed with -9 while its MCP process is busy (here: blocked writing answers
    its host does not read), the host still holding both pipes: the resident's process for
    it ends too (SIGINT, then SIGTERM), and what it stored stays whole."""
    import json
    import subprocess
    import sys
    import threading

    from helpers import REPO, mcp_initialize

    pid = resident.pid()
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-m", "rheo_cli", "mcp", "--log-turns"],
        stdin=stdin_r,
        stdout=stdout_w,
        stderr=subprocess.DEVNULL,
        env=resident.environ(),
        cwd=str(REPO),
    )
    os.close(stdin_r)
    os.close(stdout_w)
    lines = [mcp_initialize(), {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    lines += [
        {
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": "log_turn", "arguments": {"role": "user", "content": f"n{n}"}},
        }
        for n in range(2, 2000)
    ]
    data = "".join(json.dumps(m) + "\n" for m in lines).encode()

    def write() -> None:
        with contextlib.suppress(OSError):
            os.write(stdin_w, data)  # blocks once the pipe is full: the host is slow

    threading.Thread(target=write, daemon=True).start()
    child = _request_process(pid)
    deadline = time.monotonic() + 120
    counts: list[int] = []
    while time.monotonic() < deadline:  # until it stops storing: blocked on its stdout
        with contextlib.suppress(Exception):
            counts.append(db_rows(home, "SELECT count(*) FROM turns")[0][0])
        if len(counts) > 10 and counts[-1] == counts[-10] > 0:
            break
        time.sleep(0.2)
    proc.kill()
    proc.wait(timeout=30)
    deadline = time.monotonic() + 45
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    try:
        assert not alive(child), "the MCP process outlived its client"
        stored = db_rows(home, "SELECT count(*) FROM turns")[0][0]
        assert stored == counts[-1] > 0
    finally:
        os.close(stdin_w)
        os.close(stdout_r)
