"""The resident's listening loop: ``python -m rheo_cli.resident.warm.server RHEO_HOME``.

It takes ``resident.lock`` (another resident holds it: exit at once), imports what
``rheo ask`` and ``rheo mcp`` need, listens on ``RHEO_HOME/run/resident.sock`` (0600 in a
0700 folder) and forks one `child` per request from the warm process, so each request has
its own environment, descriptors and signals, and nothing of one reaches the next; memory
work a command hands over (``op`` ``work``: the REPL's, the Telegram bot's, any command's
but its own requests') gets a forked process of its own the same way. Only
peers of this user are served (SO_PEERCRED). It exits when it has had no request for the
idle time and no child (a request, or memory work waiting for a session to close) runs;
SIGTERM, ``rheo resident stop`` and a client of another build make it retire: stop
listening, let running requests finish (`DRAIN_S` at most), end the work waiting for later,
and exit, holding ``resident.lock`` (marked ``stopping``) to the end.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import signal
import socket
import struct
import sys
import time
from typing import Any

from ...providers import preconnect
from .. import protocol

IDLE_S = 15 * 60.0
"""Default idle time (seconds) before the resident exits; ``[resident] idle_minutes``."""
DRAIN_S = 30.0
"""How long a stopping resident lets running requests finish before it ends them."""
RECV_TIMEOUT_S = 5.0
"""How long a connected client may take to send its request line (others are served
meanwhile)."""


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process at the other end of the Unix socket ``conn`` (SO_PEERCRED).
    Raises OSError."""
    raw = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", raw)[1])


def peer_allowed(conn: socket.socket, uid: int | None = None) -> bool:
    """Whether the peer of ``conn`` runs as ``uid`` (default: this process's user)."""
    try:
        return peer_uid(conn) == (os.getuid() if uid is None else uid)
    except OSError:
        return False


def warm() -> None:
    """Import and ready what a request needs, so a forked child starts with it done."""
    from ...app import warm as app_warm
    from ...cli import main as cli_main
    from ...providers import anthropic_api

    cli_main.prepare()
    anthropic_api.warm()
    app_warm.prepare()
    with contextlib.suppress(Exception):
        from . import background, child  # noqa: F401


def listen(rheo_home: str) -> socket.socket:
    """Bind the socket (a stale file in its place is removed: the lock says none runs)."""
    path = protocol.socket_path(rheo_home)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(path)
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(64)
    return sock


class Pending:
    """A connection whose request line has not come yet: what it sent so far, by when the
    rest must come."""

    def __init__(self, conn: socket.socket, deadline: float) -> None:
        self.conn = conn
        self.deadline = deadline
        self.data = bytearray()
        self.fds: list[int] = []

    def close(self) -> None:
        """Close the connection and the descriptors it sent."""
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self.fds = []
        self.conn.close()


class Resident:
    """One resident's state: the listening socket, its children, when it was last used."""

    def __init__(self, rheo_home: str, sock: socket.socket, lock: int, idle_s: float) -> None:
        self.home = rheo_home
        self.sock: socket.socket | None = sock
        self.lock: int | None = lock
        self.inode = os.stat(protocol.socket_path(rheo_home)).st_ino
        self.idle_s = idle_s
        self.stamp = protocol.stamp()
        self.started = time.time()
        self.last_used = time.monotonic()
        self.children: dict[int, str] = {}
        self.served = 0
        self.handed = 0
        self.pending: dict[int, Pending] = {}
        self.drain_until: float | None = None
        self.stop_asked = False
        self.stock = preconnect.Stock()
        """The API connection prepared for the next question (`preconnect`)."""

    def retire(self) -> None:
        """Stop listening (the socket file goes if it is still ours) and start draining:
        running requests finish (`DRAIN_S` at most), work waiting for later is ended. The lock
        stays held, marked ``stopping``, until this process exits, so no second resident
        starts meanwhile."""
        for pending in list(self.pending.values()):
            pending.close()
        self.pending.clear()
        self.stock.close()
        if self.drain_until is None:
            self.drain_until = time.monotonic() + DRAIN_S
            mark(self.lock, "stopping")
        if self.sock is None:
            return
        path = protocol.socket_path(self.home)
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == self.inode:
                os.unlink(path)
        self.sock.close()
        self.sock = None

    def drain(self) -> None:
        """While stopping: tell each child (SIGUSR1: a request finishes and does no later
        work, later work ends at once); past `DRAIN_S`, SIGTERM (a reply is kept as
        interrupted), then SIGKILL."""
        if self.stop_asked and self.drain_until is None:
            self.retire()
        if self.drain_until is None:
            return
        late = time.monotonic() - self.drain_until
        signum = signal.SIGUSR1 if late < 0 else signal.SIGTERM if late < 5 else signal.SIGKILL
        for pid in list(self.children):
            with contextlib.suppress(OSError):
                os.kill(pid, signum)

    def reap(self) -> None:
        """Collect children that ended."""
        while self.children:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                return
            if pid == 0:
                return
            self.children.pop(pid, None)
            self.last_used = time.monotonic()

    def done(self) -> bool:
        """Whether the loop should end: retired or idle, with no child left."""
        if self.children:
            return False
        return self.sock is None or time.monotonic() - self.last_used > self.idle_s

    def serve(self) -> None:
        """Accept requests until `done`. Connections are read side by side (each with its
        own deadline), so one that is slow or sends nothing never delays another."""
        while not self.done():
            self.drain()
            self.reap()
            self.drop_late()
            self.stock.expire()
            waiting: list[Any] = [self.sock] if self.sock is not None else []
            waiting += [p.conn for p in self.pending.values()]
            connecting = self.stock.waiting()
            if not waiting and not connecting:
                time.sleep(0.5)
                continue
            try:
                readable, _, _ = select.select(waiting + connecting, [], [], 1.0)
            except (InterruptedError, OSError, ValueError):  # retired meanwhile (SIGTERM)
                continue
            for ready in readable:
                if ready in connecting:
                    self.stock.done(ready)
                    continue
                if self.sock is not None and ready is self.sock:
                    self.accept()
                elif ready.fileno() in self.pending:
                    self.read(self.pending[ready.fileno()])

    def accept(self) -> None:
        """Take a new connection (this user's only) and wait for its request line."""
        try:
            conn, _ = self.sock.accept() if self.sock is not None else (None, None)
        except OSError:
            return
        if conn is None:
            return
        if not peer_allowed(conn):
            conn.close()
            return
        conn.setblocking(False)
        self.pending[conn.fileno()] = Pending(conn, time.monotonic() + RECV_TIMEOUT_S)

    def read(self, pending: Pending) -> None:
        """Read what ``pending`` sent; serve it once its request line is whole."""
        try:
            data, fds, _, _ = socket.recv_fds(pending.conn, 65536, protocol.STREAM_FDS)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data, fds = b"", []
        pending.fds += list(fds)
        pending.data += data
        if not data or len(pending.data) > protocol.MAX_LINE:
            self.drop(pending)
            return
        if b"\n" not in pending.data:
            return
        del self.pending[pending.conn.fileno()]
        try:
            message = protocol.decode(bytes(pending.data).partition(b"\n")[0])
        except ValueError:
            pending.close()
            return
        pending.conn.setblocking(True)
        pending.conn.settimeout(RECV_TIMEOUT_S)
        with contextlib.suppress(Exception):
            self.handle(pending.conn, message, pending.fds)

    def drop(self, pending: Pending) -> None:
        """Close a connection that sent no request."""
        self.pending.pop(pending.conn.fileno(), None)
        pending.close()

    def drop_late(self) -> None:
        """Close the connections that did not send their request line in time."""
        now = time.monotonic()
        for pending in [p for p in self.pending.values() if p.deadline < now]:
            self.drop(pending)

    def handle(self, conn: socket.socket, message: dict[str, Any], fds: list[int]) -> None:
        """Serve one request: forked, memory work handed over (forked too), ``status`` or
        ``stop``."""
        try:
            self.last_used = time.monotonic()
            op = message.get("op")
            if op == "status":
                conn.sendall(protocol.encode(self.status()))
            elif op == "stop":
                conn.sendall(protocol.encode({"stopping": os.getpid()}))
                self.retire()
            elif op == "working":  # a request's process went on to its memory work
                pid = message.get("pid")
                if isinstance(pid, int) and self.children.get(pid) == "request":
                    self.children[pid] = "after"
                conn.sendall(protocol.encode({"ok": True}))
            elif message.get("stamp") != self.stamp:
                conn.sendall(protocol.encode({"mismatch": self.stamp}))
                self.retire()
            elif op == "work" and isinstance(message.get("env"), dict):
                pid = self.fork(conn, [], message, "work")
                conn.sendall(protocol.encode({"working": pid}))
            elif op is None and len(fds) == protocol.STREAM_FDS:
                self.fork(conn, fds, message, "request")
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            conn.close()

    def fork(self, conn: socket.socket, fds: list[int], message: dict[str, Any], kind: str) -> int:
        """Run ``message`` in a child forked from this warm process: a ``request`` (the
        command line, `child.run`; handed the API connection prepared for its question,
        `preconnect`, and the next one prepared) or ``work`` handed over (`child.work`); its
        pid."""
        origin = self.origin(message) if kind == "request" else None
        ready = self.stock.take(origin) if origin is not None else None
        pid = os.fork()
        if pid == 0:
            from . import child

            if self.lock is not None:
                os.close(self.lock)  # the lock is the server's alone
            for other in self.pending.values():
                other.close()  # other clients' connections are the server's too
            self.stock.close()  # the server's, but for the one this request was handed
            if kind == "work":
                child.work(conn, message, self.sock)  # never returns
            if origin is not None and ready is not None:
                preconnect.hand(origin, ready)
            child.run(conn, fds, message, self.sock)  # never returns
        if ready is not None:
            ready.close()  # the request's now
        if origin is not None:
            self.stock.want(origin)
        self.children[pid] = kind
        if kind == "work":
            self.handed += 1
        else:
            self.served += 1
        return pid

    @staticmethod
    def origin(message: dict[str, Any]) -> preconnect.Origin | None:
        """The API origin the request ``message`` will reach (`preconnect.origin_of`)."""
        env, argv = message.get("env"), message.get("argv")
        if not isinstance(env, dict) or not isinstance(argv, list):
            return None
        config: dict[str, Any] = {}
        with contextlib.suppress(Exception):  # unreadable: the request reports it, not this
            import tomllib

            with open(os.path.join(protocol.home(env), "config.toml"), "rb") as handle:
                config = tomllib.load(handle)
        return preconnect.origin_of(env, [str(a) for a in argv], config)

    def status(self) -> dict[str, Any]:
        """What ``rheo resident status`` shows."""
        return {
            "pid": os.getpid(),
            "home": self.home,
            "since": self.started,
            "served": self.served,
            "children": len(self.children),
            "handed": self.handed,
            "working": sum(1 for kind in self.children.values() if kind != "request"),
            "answering": sum(1 for kind in self.children.values() if kind == "request"),
            "idle_s": self.idle_s,
            "stamp": self.stamp,
        }


def mark(lock: int | None, state: str) -> None:
    """Write this process's pid and ``state`` (``stopping``) in the lock it holds: what
    ``rheo resident status`` says while the socket is gone."""
    if lock is None:
        return
    with contextlib.suppress(OSError):
        os.ftruncate(lock, 0)
        os.pwrite(lock, f"{os.getpid()}\n{state}\n".encode(), 0)


def idle_seconds(rheo_home: str) -> float:
    """``[resident] idle_minutes`` of config.toml in seconds (`IDLE_S` without it)."""
    with contextlib.suppress(Exception):
        import tomllib

        with open(os.path.join(rheo_home, "config.toml"), "rb") as handle:
            minutes = tomllib.load(handle).get("resident", {}).get("idle_minutes")
        if isinstance(minutes, int | float) and not isinstance(minutes, bool) and minutes > 0:
            return float(minutes) * 60
    return IDLE_S


def main(argv: list[str]) -> int:
    """Run the resident of RHEO_HOME ``argv[0]``; 0 when another one already runs."""
    if len(argv) != 1:
        sys.stderr.write("usage: python -m rheo_cli.resident.warm.server RHEO_HOME\n")
        return 2
    rheo_home = argv[0]
    protocol.ensure_run_dir(rheo_home)
    lock = os.open(protocol.lock_path(rheo_home), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return 0
    os.ftruncate(lock, 0)
    os.write(lock, f"{os.getpid()}\n".encode())
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # children take it on once they can
    warm()
    resident = Resident(rheo_home, listen(rheo_home), lock, idle_seconds(rheo_home))
    mark(lock, "running")
    signal.signal(signal.SIGTERM, lambda *_: setattr(resident, "stop_asked", True))
    resident.serve()
    resident.retire()
    return 0  # the lock goes with the process


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
