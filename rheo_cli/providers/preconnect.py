"""Connections opened ahead of the request: the resident keeps one TCP connection to the
model's API ready (`Stock`), and the process it forks for the next question takes it (`hand`),
so that question's request does not wait for a DNS lookup and a TCP handshake. Standard
library only on the resident's side; the request's side plugs into the SDK's HTTP pool
(`install`).

Only plain TCP is prepared: TLS, when the URL is ``https``, is negotiated by the request's own
process over the connection it was handed (a TLS session must not be shared between
processes). A connection is handed out once, only while the peer has not closed it and at most
`STOCK_MAX_S` after it was opened; anything unusable is closed and the request connects as it
always did. Never under a proxy (``HTTPS_PROXY`` and friends): the SDK then connects to the
proxy, which rheo leaves alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

ANTHROPIC_URL = "https://api.anthropic.com"
STOCK_MAX_S = 50.0
"""How long a prepared connection is handed out after it was opened (seconds): APIs close
idle keep-alive connections after about a minute."""
CONNECT_TIMEOUT_S = 5.0
"""How long the resident waits for a connection it prepares (seconds)."""
RESTOCK_FOR_S = 300.0
"""For how long after its last question an origin's connection is renewed when it expires."""
RENEW_MIN_LIFE_S = 10.0
"""A prepared connection the server closed sooner than this is not renewed until the next
question: a server (or a proxy before it) that closes idle connections at once would
otherwise be reconnected to again and again."""
PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")
MAX_FD = 65536
"""Descriptors above this are not closed by a connector (rheo opens far fewer)."""

Origin = tuple[str, int]
"""Host and port a request's process will connect to."""


def origin_of(
    environ: Mapping[str, str], argv: list[str], config: Mapping[str, Any] | None = None
) -> Origin | None:
    """The origin a request for ``argv`` with ``environ`` (and ``config``, its config.toml
    read as a table) will reach when it asks Claude through the API: ``ANTHROPIC_BASE_URL``'s
    host and port, else api.anthropic.com:443; None when it may well not (``rheo mcp`` and the
    like, no API key or token, another provider or an assistant named, a proxy set, a URL
    rheo cannot read). ``argv`` empty: a question piped to ``rheo``."""
    if argv and "ask" not in argv[:4]:
        return None
    if not (
        environ.get("ANTHROPIC_API_KEY", "").strip()
        or environ.get("ANTHROPIC_AUTH_TOKEN", "").strip()
    ):
        return None
    if _other_provider(environ, argv, config or {}):
        return None
    if any(environ.get(name) or environ.get(name.lower()) for name in PROXY_VARIABLES):
        return None
    raw = environ.get("ANTHROPIC_BASE_URL", "").strip() or ANTHROPIC_URL
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return parts.hostname, port or (443 if parts.scheme == "https" else 80)


def _other_provider(environ: Mapping[str, str], argv: list[str], config: Mapping[str, Any]) -> bool:
    """Whether the request names a provider other than Anthropic's API (``--provider``,
    ``RHEO_PROVIDER``, config.toml's ``provider``, a ``provider:model`` model) or an assistant
    (which may name its own)."""
    named: list[str] = []
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag == "--provider":
            named.append(value)
        elif flag in ("-m", "--model") and ":" in value:
            named.append(value.split(":", 1)[0])
    if any(a in ("-a", "--assistant") or a.startswith("--assistant=") for a in argv):
        return True
    named += [a.split("=", 1)[1] for a in argv if a.startswith("--provider=")]
    named.append(environ.get("RHEO_PROVIDER", ""))
    model = environ.get("RHEO_MODEL", "")
    named.append(model.split(":", 1)[0] if ":" in model else "")
    configured, configured_model = config.get("provider"), config.get("model")
    if isinstance(configured, str):
        named.append(configured)
    if isinstance(configured_model, str) and ":" in configured_model:
        named.append(configured_model.split(":", 1)[0])
    return any(n.strip().lower() not in ("", "anthropic") for n in named)


def alive(sock: socket.socket) -> bool:
    """Whether ``sock`` is connected with nothing to read: the peer has not closed it and has
    sent nothing (a server sends nothing before the request)."""
    try:
        sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
    except (BlockingIOError, InterruptedError):
        return True
    except OSError:
        return False
    return False  # b"": closed by the peer; data: not a fresh HTTP connection


@dataclass
class _Ready:
    sock: socket.socket
    opened: float


@dataclass
class _Connecting:
    sock: socket.socket
    started: float
    pid: int


def connector(origin: Origin, channel: socket.socket) -> None:
    """A connector process's whole life (forked by `Stock`; ends with ``os._exit``): close
    every descriptor it inherited but ``channel``, connect to ``origin`` (the name's lookup
    and the TCP handshake, up to `CONNECT_TIMEOUT_S`) and send the connected socket back on
    ``channel``. A process of its own, because a lookup can take seconds and the resident's
    loop must not wait for it, and a thread would make forking requests unsafe."""
    try:
        keep = channel.fileno()
        os.closerange(3, keep)
        os.closerange(keep + 1, MAX_FD)
        connection = socket.create_connection(origin, timeout=CONNECT_TIMEOUT_S)
        socket.send_fds(channel, [b"1"], [connection.fileno()])
    finally:
        os._exit(0)


def _reaped(pid: int) -> bool:
    """Collect the connector ``pid`` if it ended; True once it is gone (also when the
    resident's loop collected it already)."""
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
    except (ChildProcessError, OSError):
        return True
    return done == pid


@dataclass
class Stock:
    """The resident's prepared connections, at most one per origin. Its loop calls
    `waiting` (sockets whose connect is in progress: wait for them to be writable), `done`
    when one is, `expire` now and then, `take` when forking a request, and `want` after."""

    ready: dict[Origin, _Ready] = field(default_factory=dict)
    connecting: dict[Origin, _Connecting] = field(default_factory=dict)
    asked: dict[Origin, float] = field(default_factory=dict)
    ending: set[int] = field(default_factory=set)
    """Connectors done with that may not have exited yet: collected by `expire`."""

    def want(self, origin: Origin, now: float | None = None) -> None:
        """Start preparing a connection to ``origin`` (a question for it was just forked)
        unless one is ready or under way. Never raises, never waits: a connector process
        looks the name up and connects."""
        now = time.monotonic() if now is None else now
        self.asked[origin] = now
        self._connect(origin, now)

    def _connect(self, origin: Origin, now: float) -> None:
        """Start a connector process for ``origin`` (see `connector`)."""
        if origin in self.ready or origin in self.connecting:
            return
        with contextlib.suppress(OSError):
            ours, theirs = socket.socketpair()
            pid = os.fork()
            if pid == 0:  # pragma: no cover - the connector's life ends in os._exit
                connector(origin, theirs)
            theirs.close()
            self.connecting[origin] = _Connecting(ours, now, pid)

    def waiting(self) -> list[socket.socket]:
        """The connectors' sockets: each becomes readable once its connection came (or its
        connector gave up)."""
        return [entry.sock for entry in self.connecting.values()]

    def done(self, sock: socket.socket, now: float | None = None) -> None:
        """``sock`` (one of `waiting`) became readable: take the connection it brings."""
        now = time.monotonic() if now is None else now
        for origin, entry in list(self.connecting.items()):
            if entry.sock is not sock:
                continue
            del self.connecting[origin]
            fds: list[int] = []
            with contextlib.suppress(OSError):
                _, fds, _, _ = socket.recv_fds(sock, 1, 1)
            sock.close()
            self._reap(entry.pid)
            if fds:
                connection = socket.socket(fileno=fds[0])
                connection.setblocking(True)
                self.ready[origin] = _Ready(connection, now)

    def expire(self, now: float | None = None) -> None:
        """Close connections too old to hand out, or closed by their peer, and end connectors
        that took too long; renew the connections of origins asked for within `RESTOCK_FOR_S`
        (one the peer closed only when it had lived `RENEW_MIN_LIFE_S`)."""
        now = time.monotonic() if now is None else now
        self.ending = {pid for pid in self.ending if not _reaped(pid)}
        for origin, entry in list(self.connecting.items()):
            if now - entry.started > CONNECT_TIMEOUT_S + 1:
                del self.connecting[origin]
                entry.sock.close()
                with contextlib.suppress(OSError):
                    os.kill(entry.pid, signal.SIGKILL)
                self._reap(entry.pid)
        for origin, ready in list(self.ready.items()):
            lived = now - ready.opened
            old = lived > STOCK_MAX_S
            if old or not alive(ready.sock):
                del self.ready[origin]
                ready.sock.close()
                asked_lately = now - self.asked.get(origin, -RESTOCK_FOR_S) < RESTOCK_FOR_S
                if asked_lately and (old or lived >= RENEW_MIN_LIFE_S):
                    self._connect(origin, now)

    def _reap(self, pid: int) -> None:
        """Collect connector ``pid``, now or (not exited yet) at a later `expire`."""
        if not _reaped(pid):
            self.ending.add(pid)

    def take(self, origin: Origin, now: float | None = None) -> socket.socket | None:
        """The connection ready for ``origin``, no longer the stock's (the caller closes it
        once it was handed to the forked request); None when there is none usable."""
        now = time.monotonic() if now is None else now
        entry = self.ready.pop(origin, None)
        if entry is None:
            return None
        if now - entry.opened > STOCK_MAX_S or not alive(entry.sock):
            entry.sock.close()
            return None
        return entry.sock

    def close(self) -> None:
        """Close every connection (the resident is stopping)."""
        for ready in self.ready.values():
            ready.sock.close()
        for connecting in self.connecting.values():
            connecting.sock.close()
        self.ready.clear()
        self.connecting.clear()


HANDED: dict[Origin, socket.socket] = {}
"""In a request's process: the connection the resident prepared, by origin, until the SDK's
pool takes it (`Backend.connect_tcp`)."""


def hand(origin: Origin, sock: socket.socket) -> None:
    """Give this process (a request forked from the resident) the connection ``sock`` to
    ``origin`` for its first connect there."""
    old = HANDED.pop(origin, None)
    if old is not None:
        old.close()
    HANDED[origin] = sock


def take_handed(host: str, port: int) -> socket.socket | None:
    """The handed connection to ``host``:``port`` while it is still usable (once); None."""
    sock = HANDED.pop((host, port), None)
    if sock is None:
        return None
    if not alive(sock):
        sock.close()
        return None
    return sock


def install(http_client: Any) -> bool:
    """Make ``http_client`` (the SDK's httpx client) connect through a handed connection
    first: its pool's network backend is wrapped so that a connect to a handed origin takes
    that socket. True when installed; False (nothing changed) when the client is not built
    as this version of the SDK builds it, or nothing was handed."""
    if not HANDED:
        return False
    try:
        pool = http_client._transport._pool
        inner = pool._network_backend
        pool._network_backend = _backend(inner)
    except Exception:  # noqa: BLE001 - another SDK layout: connect as always
        return False
    return True


def _backend(inner: Any) -> Any:
    """A network backend that connects through `HANDED` first, else through ``inner``."""
    from httpcore2._backends.sync import SyncStream

    class Backend(type(inner)):  # type: ignore[misc]
        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Iterable[Any] | None = None,
        ) -> Any:
            sock = None if local_address else take_handed(host, port)
            if sock is None:
                return inner.connect_tcp(host, port, timeout, local_address, socket_options)
            for option in socket_options or ():
                with contextlib.suppress(OSError):
                    sock.setsockopt(*option)
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return SyncStream(sock)

    return Backend()


def close_handed() -> None:
    """Close what this process was handed and did not use."""
    for sock in HANDED.values():
        with contextlib.suppress(OSError):
            sock.close()
    HANDED.clear()


__all__ = [
    "HANDED",
    "Origin",
    "Stock",
    "alive",
    "close_handed",
    "hand",
    "install",
    "origin_of",
    "take_handed",
]
