"""``rheo ask`` through the resident: the same output and exit codes as in-process, each
request with its own environment, and the in-process path whenever the resident is off,
stale or of another build."""

from __future__ import annotations

import json
import os
import socket
import stat
import time

from fakeapi import FakeAnthropic, text
from helpers import db_rows

from rheo_cli.resident import protocol


def test_the_first_ask_starts_the_resident_and_the_next_one_goes_through_it(resident, api, home):
    api.default = text("Paris is the capital.", chunks=3)
    first = resident.run("ask", "What", "is", "the", "capital?")
    assert first.returncode == 0, first.stderr
    assert first.stdout == "Paris is the capital.\n"
    served = resident.ready()["served"]
    second = resident.run("ask", "--json", "and of Spain?")
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["turn_ids"] == [3, 4]
    assert second.stderr == ""
    assert resident.status()["served"] == served + 1
    rows = db_rows(home, "SELECT role, content FROM turns ORDER BY id")
    assert [r["content"] for r in rows][-2:] == ["and of Spain?", "Paris is the capital."]
    folder = os.stat(protocol.run_dir(str(home)))
    sock = os.stat(protocol.socket_path(str(home)))
    assert stat.S_IMODE(folder.st_mode) == 0o700
    assert stat.S_IMODE(sock.st_mode) == 0o600


def test_stdin_usage_errors_and_exit_codes_are_those_of_the_rheo_process(resident, api):
    resident.ready()
    api.default = text("It says hello.")
    piped = resident.run("ask", "what does this say?", input="hello\n")
    assert piped.returncode == 0, piped.stderr
    assert "hello" in api.last.body["messages"][-1]["content"][-1]["text"]
    served = resident.status()["served"]
    bad = resident.run("ask", "--session", "0", "x")
    assert bad.returncode == 2
    assert "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    assert resident.status()["served"] == served + 1  # the bad one ran in the resident too


def test_two_asks_at_once_each_reach_their_own_key_and_base_url(resident, api):
    resident.ready()
    api.default = text("one", delay=1.0)
    with FakeAnthropic() as other:
        other.default = text("two", delay=1.0)
        first = resident.start("ask", "first")
        second = resident.start(
            "ask", "second", ANTHROPIC_BASE_URL=other.base_url, ANTHROPIC_API_KEY="key-two"
        )
        out1, err1 = first.communicate(timeout=120)
        out2, err2 = second.communicate(timeout=120)
        assert (first.returncode, out1) == (0, "one\n"), err1
        assert (second.returncode, out2) == (0, "two\n"), err2
        assert {r.api_key for r in other.message_requests} == {"key-two"}
    assert {r.api_key for r in api.message_requests} == {"test-key"}


def test_twenty_asks_at_once_are_all_answered_and_stored_once(resident, api, home):
    resident.ready()
    api.default = text("fine")
    procs = [resident.start("ask", "--new", f"question {i}") for i in range(20)]
    results = [(p.communicate(timeout=170), p.returncode) for p in procs]
    assert all(code == 0 and out == "fine\n" for (out, _), code in results), results
    rows = db_rows(home, "SELECT content FROM turns WHERE role = 'user'")
    assert sorted(r["content"] for r in rows) == sorted(f"question {i}" for i in range(20))


def test_the_environment_of_one_request_does_not_reach_the_next(resident, api):
    resident.ready()
    api.default = text("ok")
    assert resident.run("ask", "hi", ANTHROPIC_API_KEY="first-key").returncode == 0
    later = resident.run("ask", "hi", ANTHROPIC_API_KEY="")
    assert later.returncode != 0 and "Traceback" not in later.stderr
    assert [r.api_key for r in api.message_requests] == ["first-key"]


def test_resident_off_runs_in_process_and_starts_nothing(resident, api, home):
    api.default = text("ok")
    result = resident.run("ask", "hi", RHEO_RESIDENT="0")
    assert result.returncode == 0, result.stderr
    assert not os.path.exists(protocol.run_dir(str(home)))  # none was started
    (home / "config.toml").write_text('[resident]\nmode = "off"\n')
    resident.env["RHEO_RESIDENT"] = ""  # unset: config.toml decides
    off = resident.run("ask", "hi")
    assert off.returncode == 0, off.stderr
    assert not os.path.exists(protocol.run_dir(str(home)))


def test_a_stale_socket_is_replaced_and_the_ask_answered_in_process(resident, api, home):
    api.default = text("still here")
    folder = protocol.ensure_run_dir(str(home))
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(os.path.join(folder, protocol.SOCKET_NAME))
    stale.close()  # the file stays, nobody listens
    result = resident.run("ask", "hello")
    assert (result.returncode, result.stdout, result.stderr) == (0, "still here\n", "")
    assert resident.ready()["served"] == 0  # a new resident took the socket's place


def test_a_resident_of_another_build_retires_and_the_client_runs_in_process(resident, home):
    resident.ready()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(protocol.socket_path(str(home)))
    with sock:
        sock.sendall(protocol.encode({"stamp": "another-build", "argv": ["ask", "x"]}))
        answer = protocol.LineReader(sock).next()
    assert answer is not None and "mismatch" in answer
    deadline = time.monotonic() + 10
    while os.path.exists(protocol.socket_path(str(home))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(protocol.socket_path(str(home)))


def test_incognito_through_the_resident_stores_nothing(resident, api, home):
    resident.ready()
    api.default = text("secret kept")
    served = resident.status()["served"]
    result = resident.run("ask", "--incognito", "my secret", RHEO_WORKER="spawn")
    assert (result.returncode, result.stdout) == (0, "secret kept\n"), result.stderr
    assert resident.status()["served"] == served + 1
    assert db_rows(home, "SELECT count(*) AS n FROM turns")[0]["n"] == 0
    time.sleep(1)
    assert [r for r in api.message_requests if "my secret" in json.dumps(r.body)] == [
        api.message_requests[0]
    ]


def _no_resident_after(resident, home, *args: str, **extra: str):
    result = resident.run(*args, **extra)
    time.sleep(1.5)  # a resident started on the way out would have made its folder by now
    assert not os.path.exists(protocol.run_dir(str(home))), result.stderr
    return result


def test_an_ask_that_fails_before_the_model_starts_no_resident(resident, api, home):
    api.default = text("never asked")
    resident.env.pop("ANTHROPIC_API_KEY")
    result = _no_resident_after(resident, home, "ask", "hi")
    assert result.returncode == 2 and "no model provider" in result.stderr.splitlines()[0]
    resident.env["ANTHROPIC_API_KEY"] = "test-key"
    usage = _no_resident_after(resident, home, "ask", "--session", "0", "x")
    assert usage.returncode == 2 and "Traceback" not in usage.stderr
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[session\ngap_hours = \n")
    bad = _no_resident_after(resident, home, "ask", "hi")
    assert bad.returncode in (1, 2) and "Traceback" not in bad.stderr
    assert api.message_requests == []
    (home / "config.toml").unlink()
    ok = resident.run("ask", "hi")  # the first ask that reaches the model starts it
    assert ok.returncode == 0, ok.stderr
    assert resident.ready()["served"] == 0
