"""Every way a model call can fail: one line on stderr, exit 1, nothing stored is lost."""

from __future__ import annotations

import socket

import pytest
from fakeapi import drop, error, hang, stream_error, text
from helpers import db_rows


def turns(home):
    return [tuple(r) for r in db_rows(home, "SELECT role, content, status FROM turns ORDER BY id")]


def assert_one_line_failure(result, pattern):
    assert result.exit_code == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("rheo: ")
    assert pattern in lines[0], lines[0]
    assert "Traceback" not in result.stderr + result.stdout


@pytest.mark.parametrize(
    ("reply", "pattern"),
    [
        (error(401, "authentication_error", "invalid x-api-key"), "refused the key (401)"),
        (error(403, "permission_error", "no access"), "denied access (403)"),
        (error(400, "invalid_request_error", "bad thing"), "refused the request (400)"),
        (error(404, "not_found_error", "model: nope"), "not found at the API (404)"),
        (error(413, "request_too_large", "too big"), "too large"),
    ],
)
def test_non_retryable_status_errors(rheo, api, home, reply, pattern):
    api.queue(reply)
    result = rheo("ask", "hello there")
    assert_one_line_failure(result, pattern)
    assert len(api.message_requests) == 1  # not retried
    assert turns(home) == [("user", "hello there", None), ("assistant", "", "error")]


@pytest.mark.parametrize(
    ("status", "etype", "pattern"),
    [
        (429, "rate_limit_error", "rate limited"),
        (529, "overloaded_error", "overloaded (529)"),
        (500, "api_error", "the API failed (500"),
        (503, "api_error", "the API failed (503"),
    ],
)
def test_retryable_status_errors_retry_then_fail_cleanly(rheo, api, home, status, etype, pattern):
    api.default = error(status, etype, "try later")
    result = rheo("ask", "q")
    assert_one_line_failure(result, pattern)
    assert len(api.message_requests) == 3  # the SDK's two retries, honouring retry-after-ms
    assert turns(home)[-1] == ("assistant", "", "error")


def test_retry_that_succeeds_is_invisible(rheo, api, home):
    api.queue(error(529, "overloaded_error", "busy"), text("fine"))
    result = rheo("ask", "q")
    assert result.exit_code == 0 and result.stdout == "fine\n"
    assert turns(home)[-1] == ("assistant", "fine", "ok")


def test_dropped_stream_keeps_the_partial_reply(rheo, api, home):
    api.default = drop("The first half of ", after_chunks=2)
    result = rheo("ask", "tell me")
    assert result.exit_code == 1
    assert "broke off" in result.stderr and "Traceback" not in result.stderr
    role, content, status = turns(home)[-1]
    assert role == "assistant" and status == "error"
    assert content.startswith("The first")


def test_error_event_mid_stream(rheo, api, home):
    api.queue(stream_error("overloaded_error", "Overloaded", text_before="partial "))
    result = rheo("ask", "q")
    assert result.exit_code == 1
    assert "overloaded" in result.stderr.lower()
    assert turns(home)[-1][2] == "error"


def test_timeout(rheo, api, home):
    (home).mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("timeout = 1\n")
    api.default = hang(5)
    result = rheo("ask", "q")
    assert_one_line_failure(result, "timed out")
    assert len(api.message_requests) == 1  # a timeout is reported, not retried
    assert turns(home) == [("user", "q", None), ("assistant", "", "error")]


def test_connection_refused(rheo, monkeypatch, home):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    result = rheo("ask", "anyone there?")
    assert_one_line_failure(result, f"cannot reach the API at http://127.0.0.1:{port}")
    assert turns(home)[0] == ("user", "anyone there?", None)


def test_no_key_is_a_clear_error_and_the_question_is_kept(rheo, home):
    result = rheo("ask", "--provider", "anthropic", "q")
    assert_one_line_failure(result, "ANTHROPIC_API_KEY is not set")
    assert turns(home) == [("user", "q", None), ("assistant", "", "error")]


def test_no_key_shows_how_to_set_one_up_and_stores_nothing(rheo, home):
    result = rheo("ask", "q")
    assert result.exit_code == 2
    assert "none is configured" in result.stderr
    assert "export ANTHROPIC_API_KEY" in result.stderr
    assert len(result.stderr.splitlines()) <= 24  # one screen
    assert result.stdout == ""
    assert not (home / "rheo.db").exists()


def test_json_on_failure_reports_status_and_error(rheo, api, home):
    import json

    api.default = drop("Half of it ", after_chunks=1)
    result = rheo("ask", "--json", "q")
    assert result.exit_code == 1
    out = json.loads(result.stdout)
    assert out["status"] == "error" and "broke off" in out["error"]
    assert out["reply"].startswith("Half") and out["turn_ids"] == [1, 2]


def test_error_turn_records_the_failure_in_meta(rheo, api, home):
    api.queue(error(400, "invalid_request_error", "bad"))
    rheo("ask", "q")
    meta = db_rows(home, "SELECT meta FROM turns WHERE role = 'assistant'")[0][0]
    assert '"kind": "bad_request"' in meta


def test_next_turn_after_a_failure_works_and_sees_the_failed_question(rheo, api, home):
    api.queue(
        error(500, "api_error", "x"),
        error(500, "api_error", "x"),
        error(500, "api_error", "x"),
        text("answer"),
    )
    assert rheo("ask", "first try").exit_code == 1
    assert rheo("ask", "second try").exit_code == 0
    sent = api.last.body["messages"][0]["content"][-1]["text"]
    assert "user: first try" in sent
    assert "assistant (error)" not in sent  # an empty failed reply is not injected


def test_stream_that_ends_without_message_stop_is_not_taken_as_complete(rheo, api, home):
    from fakeapi import truncate

    api.queue(truncate("Half an ans", after_chunks=2))
    result = rheo("ask", "q")
    assert result.exit_code == 1
    assert "ended before the reply was complete" in result.stderr
    assert turns(home)[-1][2] == "error"


def test_long_retry_after_is_not_waited_for(rheo, api, home):
    api.default = error(429, "rate_limit_error", "slow down", headers={"retry-after": "120"})
    result = rheo("ask", "q")
    assert_one_line_failure(result, "rate limited")
    assert len(api.message_requests) == 1


def test_retry_after_is_honoured(rheo, api, home):
    import time

    api.queue(
        error(529, "overloaded_error", "busy", headers={"retry-after-ms": "400"}), text("done")
    )
    start = time.monotonic()
    result = rheo("ask", "q")
    assert result.exit_code == 0 and result.stdout == "done\n"
    gap = api.message_requests[1].received_at - api.message_requests[0].received_at
    assert gap >= 0.4 and time.monotonic() - start < 10
