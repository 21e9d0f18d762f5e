"""API faults the provider-error tests did not cover: a rate limit or overload that asks for a
long wait names it; a malformed stream event is one line with the partial reply kept."""

from __future__ import annotations

import pytest
from fakeapi import error, malformed, text
from test_provider_errors import assert_one_line_failure, turns


@pytest.mark.parametrize(
    ("status", "etype", "header", "line"),
    [
        (429, "rate_limit_error", "60", "rate limited (429): the API asked to wait 60 s"),
        (529, "overloaded_error", "45", "the API is overloaded (529): the API asked to wait 45 s"),
        (429, "rate_limit_error", "600", "rate limited (429): the API asked to wait 10 min"),
    ],
)
def test_a_long_wait_asked_by_the_api_is_named(rheo, api, home, status, etype, header, line):
    api.default = error(status, etype, "slow down", headers={"retry-after": header})
    result = rheo("ask", "q")
    assert_one_line_failure(result, line)
    assert len(api.message_requests) == 1  # not waited for: reported at once
    assert turns(home) == [("user", "q", None), ("assistant", "", "error")]


def test_a_short_wait_is_honoured_and_retries_are_bounded(rheo, api, home):
    api.default = error(429, "rate_limit_error", "slow down", headers={"retry-after-ms": "300"})
    result = rheo("ask", "q")
    assert_one_line_failure(result, "rate limited")
    assert len(api.message_requests) == 3  # two retries, then the error
    gaps = [
        b.received_at - a.received_at
        for a, b in zip(api.message_requests, api.message_requests[1:], strict=False)
    ]
    assert all(g >= 0.3 for g in gaps)


def test_a_malformed_event_mid_stream_keeps_the_partial_reply(rheo, api, home):
    api.queue(malformed("Half of the ans", after_chunks=2))
    result = rheo("ask", "q")
    assert_one_line_failure(result, "the API sent a malformed event")
    assert turns(home) == [("user", "q", None), ("assistant", "Half of the ans", "error")]
    assert len(api.message_requests) == 1  # text had arrived: not retried


def test_a_malformed_event_before_any_text_is_one_line(rheo, api, home):
    api.queue(malformed("", after_chunks=0), text("fine"))
    result = rheo("ask", "q")
    assert_one_line_failure(result, "the API sent a malformed event")
    assert turns(home) == [("user", "q", None), ("assistant", "", "error")]
    assert len(api.message_requests) == 1


def test_the_next_ask_after_a_fault_works(rheo, api, home):
    api.queue(malformed("Half", after_chunks=1), text("whole"))
    assert rheo("ask", "first").exit_code == 1
    again = rheo("ask", "second")
    assert again.exit_code == 0 and again.stdout == "whole\n"
    assert [t[2] for t in turns(home)] == [None, "error", None, "ok"]


@pytest.mark.boundary
@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("text/plain", b"hello, not an API reply"),
        ("text/event-stream", b""),
        (
            "text/event-stream",
            b'event: message_start\ndata: {"type": "message_start", "message": null}\n\n',
        ),
    ],  # fmt: skip
)
def test_a_200_reply_that_is_not_the_api_is_one_line_naming_it(home, content_type, body):
    """A server answering 200 with something else (plain text, an empty stream, a null
    message): one line saying the reply cannot be read, the question kept for --retry."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from types import SimpleNamespace

    from helpers import api_env, run_rheo

    class Odd(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Odd)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        fake = SimpleNamespace(base_url=f"http://127.0.0.1:{server.server_port}")
        done = run_rheo("ask", "q", env=api_env(fake, home, RHEO_WORKER="off"))
    finally:
        server.shutdown()
    said = done.stderr.decode().strip().splitlines()
    assert done.returncode == 1 and len(said) == 1, said
    assert "sent a reply rheo cannot read" in said[0] and "Traceback" not in said[0]
    assert turns(home)[0] == ("user", "q", None)
