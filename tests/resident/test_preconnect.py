"""The API connection the resident prepares for the next question: a warm ``rheo ask`` sends
its request over a connection opened before the command started, and one the server closed
meanwhile is never handed out."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time

import pytest
from fakeapi import text
from helpers import alive

from rheo_cli.providers import preconnect


def test_a_warm_ask_sends_its_request_over_a_connection_opened_before_it_started(resident, api):
    api.default = text("Lisbon.", chunks=2)
    first = resident.run("ask", "capital of Portugal?")
    assert first.returncode == 0, first.stderr
    resident.ready()
    second = resident.run("ask", "and of Spain?")  # through the resident, first connection
    assert second.returncode == 0, second.stderr
    time.sleep(0.5)  # the resident's next connection is under way after each fork
    started = time.monotonic()
    third = resident.run("ask", "and of France?")
    assert third.returncode == 0, third.stderr
    assert third.stdout == "Lisbon.\n"
    posts = [r for r in api.requests if r.method == "POST"]
    assert posts[-1].connected_at < started < posts[-1].received_at


def test_a_warm_ask_without_a_key_is_handed_nothing_and_says_what_it_always_said(resident, api):
    api.default = text("Lisbon.")
    assert resident.run("ask", "warm up").returncode == 0
    resident.ready()
    missing = resident.run("ask", "hello", ANTHROPIC_API_KEY="")
    assert missing.returncode != 0
    assert "ANTHROPIC_API_KEY" in missing.stderr
    assert "Traceback" not in missing.stderr


class Listener:
    """A loopback TCP server that accepts and keeps (or closes) what connects."""

    def __init__(self, close_at_once: bool = False) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self.close_at_once = close_at_once
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.close_at_once:
                conn.close()
            else:
                self.accepted.append(conn)


def settle(stock: preconnect.Stock, deadline_s: float = 5.0) -> None:
    """Run the stock's part of the resident's loop until nothing is connecting."""
    import select

    end = time.monotonic() + deadline_s
    while stock.waiting() and time.monotonic() < end:
        readable, _, _ = select.select(stock.waiting(), [], [], 0.2)
        for sock in readable:
            stock.done(sock)


def test_the_stock_hands_a_live_connection_once_and_not_an_old_or_closed_one():
    server = Listener()
    origin = ("127.0.0.1", server.port)
    stock = preconnect.Stock()
    stock.want(origin)
    (connector,) = [entry.pid for entry in stock.connecting.values()]
    settle(stock)
    time.sleep(0.3)
    stock.expire()  # the resident's loop collects the connector once it has exited
    assert stock.ending == set()
    with pytest.raises(ChildProcessError):
        os.waitpid(connector, os.WNOHANG)  # no zombie left behind
    sock = stock.take(origin)
    assert sock is not None and preconnect.alive(sock)
    assert stock.take(origin) is None  # handed once
    sock.close()

    stock.want(origin, now=100.0)
    settle(stock)
    stock.ready[origin].opened = 100.0
    assert stock.take(origin, now=100.0 + preconnect.STOCK_MAX_S + 1) is None  # too old

    closing = Listener(close_at_once=True)
    gone = ("127.0.0.1", closing.port)
    stock.want(gone)
    settle(stock)
    time.sleep(0.3)  # the peer's FIN arrives
    assert stock.take(gone) is None
    stock.close()


def test_expired_connections_are_renewed_only_for_origins_asked_for_lately():
    server = Listener()
    origin = ("127.0.0.1", server.port)
    stock = preconnect.Stock()
    stock.want(origin, now=0.0)
    settle(stock)
    stock.ready[origin].opened = 0.0
    stock.expire(now=preconnect.STOCK_MAX_S + 1)  # asked for 51 s ago: renewed
    assert origin in stock.connecting or origin in stock.ready
    settle(stock)
    stock.ready[origin].opened = 0.0
    stock.expire(now=preconnect.RESTOCK_FOR_S + 1)  # no question for five minutes: dropped
    assert origin not in stock.connecting and origin not in stock.ready
    stock.close()


def test_a_connector_that_cannot_connect_gives_up_and_is_gone():
    free = socket.create_server(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()  # nothing listens there now
    stock = preconnect.Stock()
    stock.want(("127.0.0.1", port))
    (entry,) = stock.connecting.values()
    settle(stock)
    assert stock.ready == {} and stock.connecting == {}
    with contextlib.suppress(ChildProcessError):
        os.waitpid(entry.pid, 0)
    assert not alive(entry.pid)


def test_a_connector_that_hangs_is_ended_after_the_connect_timeout():
    stock = preconnect.Stock()
    stock.want(("127.0.0.1", 9), now=0.0)
    (entry,) = stock.connecting.values()
    os.kill(entry.pid, signal.SIGSTOP)  # as if the name's lookup never came back
    stock.expire(now=preconnect.CONNECT_TIMEOUT_S + 2)
    assert stock.connecting == {}
    with contextlib.suppress(ChildProcessError):
        os.waitpid(entry.pid, 0)
    assert not alive(entry.pid)


def test_a_connection_the_server_closes_at_once_is_not_renewed_until_the_next_question():
    closing = Listener(close_at_once=True)
    origin = ("127.0.0.1", closing.port)
    stock = preconnect.Stock()
    stock.want(origin)
    settle(stock)
    time.sleep(0.3)  # closed by the server before it was ever handed out
    stock.expire()
    assert stock.ready == {} and stock.connecting == {}  # no reconnecting again and again
    stock.want(origin)  # the next question asks again: one new connection
    assert origin in stock.connecting
    settle(stock)
    stock.close()


def test_which_requests_get_a_connection():
    key = {"ANTHROPIC_API_KEY": "k"}
    assert preconnect.origin_of(key, ["ask", "hi"]) == ("api.anthropic.com", 443)
    assert preconnect.origin_of(key, []) == ("api.anthropic.com", 443)  # piped to rheo
    local = {**key, "ANTHROPIC_BASE_URL": "http://127.0.0.1:8123/v1"}
    assert preconnect.origin_of(local, ["-p", "work", "ask", "hi"]) == ("127.0.0.1", 8123)
    assert preconnect.origin_of(key, ["mcp"]) is None
    assert preconnect.origin_of({}, ["ask", "hi"]) is None
    assert preconnect.origin_of({**key, "HTTPS_PROXY": "http://proxy:3128"}, ["ask"]) is None
    assert preconnect.origin_of({**key, "https_proxy": "http://proxy:3128"}, ["ask"]) is None
    assert preconnect.origin_of({**key, "ANTHROPIC_BASE_URL": "http://[::1"}, ["ask"]) is None
    assert preconnect.origin_of({**key, "ANTHROPIC_BASE_URL": "ftp://x"}, ["ask"]) is None
    # another provider, or an assistant that may name one: nothing prepared for Anthropic
    assert preconnect.origin_of({**key, "RHEO_PROVIDER": "openai"}, ["ask", "q"]) is None
    assert preconnect.origin_of({**key, "RHEO_PROVIDER": "anthropic"}, ["ask"]) is not None
    assert preconnect.origin_of(key, ["ask", "--provider", "ollama", "q"]) is None
    assert preconnect.origin_of(key, ["ask", "--provider=claude-code", "q"]) is None
    assert preconnect.origin_of(key, ["ask", "-m", "openai:gpt-4o", "q"]) is None
    assert preconnect.origin_of(key, ["ask", "-m", "claude-sonnet-4-5", "q"]) is not None
    assert preconnect.origin_of(key, ["ask", "-a", "coach", "q"]) is None
    assert preconnect.origin_of({**key, "RHEO_MODEL": "ollama:llama3"}, ["ask"]) is None
    assert preconnect.origin_of(key, ["ask"], {"provider": "openai"}) is None
    assert preconnect.origin_of(key, ["ask"], {"model": "openai:gpt-4o"}) is None
    assert preconnect.origin_of(key, ["ask"], {"provider": "anthropic"}) is not None


def test_a_handed_connection_closed_by_its_peer_is_not_used():
    closing = Listener(close_at_once=True)
    sock = socket.create_connection(("127.0.0.1", closing.port))
    preconnect.hand(("127.0.0.1", closing.port), sock)
    time.sleep(0.3)
    assert preconnect.take_handed("127.0.0.1", closing.port) is None
    assert preconnect.HANDED == {}
