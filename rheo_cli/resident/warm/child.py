"""One request, in a process forked from the warm resident: take on the client's
descriptors, environment, working folder and umask, run the command line exactly as the
``rheo`` process would, send the exit status; then, with the client gone, do the memory work
the command queued (`background`). Or one hand-off of memory work (`work`): the environment,
folder and umask of the command that handed it (no descriptors), then the same work."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
import sys
import threading
import time
import traceback
from typing import Any

from .. import protocol

GO_TIMEOUT_S = 30.0
"""How long the process waits for the client's word to go on (it answers at once)."""


def _streams(spec: list[Any]) -> None:
    """New ``sys.stdin``/``stdout``/``stderr`` over descriptors 0-2 with the client's
    encodings; stdout line-buffered on a terminal, block-buffered elsewhere (as Python's)."""

    def pair(i: int) -> tuple[str, str]:
        try:
            enc, errors = spec[i]
        except (IndexError, TypeError, ValueError):
            enc, errors = None, None
        return str(enc or "utf-8"), str(errors or "strict")

    def wrap(fd: int, mode: str, line_buffering: bool) -> io.TextIOWrapper:
        enc, errors = pair(fd)
        raw = open(fd, mode, closefd=False)  # noqa: SIM115 - the process's own stream
        return io.TextIOWrapper(raw, encoding=enc, errors=errors, line_buffering=line_buffering)

    sys.stdin = wrap(0, "rb", False)
    sys.stdout = wrap(1, "wb", os.isatty(1))
    sys.stderr = wrap(2, "wb", True)
    setattr(sys, "__stdin__", sys.stdin)  # noqa: B010 - what Python set them to at start
    setattr(sys, "__stdout__", sys.stdout)  # noqa: B010
    setattr(sys, "__stderr__", sys.stderr)  # noqa: B010


def take_on_env(message: dict[str, Any]) -> None:
    """Take on the environment of the client's process (``TZ`` applied; nothing of the
    resident's own or of an earlier request stays), its folder and umask."""
    env = message.get("env")
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in (env or {}).items()})
    time.tzset()
    if message.get("cwd"):
        with contextlib.suppress(OSError):
            os.chdir(str(message["cwd"]))
    if isinstance(message.get("umask"), int):
        os.umask(message["umask"] & 0o777)


def take_on(fds: list[int], message: dict[str, Any]) -> list[str]:
    """Become the client's process: its descriptors 0-2, environment (`take_on_env`),
    folder, umask and arguments; Python's own signal handling. Returns the arguments."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    take_on_env(message)
    argv = [str(a) for a in message.get("argv") or []]
    sys.argv = ["rheo", *argv]
    _streams(message.get("streams") or [])
    return argv


def run_command() -> int:
    """Run the command line in ``sys.argv`` and return its exit status as the ``rheo``
    process would have exited with."""
    from ...cli.main import main as cli_main

    try:
        cli_main()
    except KeyboardInterrupt:
        return 130
    except SystemExit as exc:
        code = exc.code
        if code is None:
            return 0
        if isinstance(code, int):
            return code
        with contextlib.suppress(Exception):
            sys.stderr.write(f"{code}\n")
        return 1
    return 0


def _detach(rheo_home: str) -> None:
    """Let go of the client's descriptors (its pipes see their end), stderr to the log."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    try:
        log = os.open(
            os.path.join(protocol.run_dir(rheo_home), protocol.LOG_NAME),
            os.O_WRONLY | os.O_APPEND | os.O_CREAT,
            0o600,
        )
        os.dup2(log, 2)
        os.close(log)
    except OSError:
        os.dup2(null, 2)
    os.close(null)


def handshake(conn: socket.socket) -> bool:
    """Tell the client this process runs its command, and wait for its word that it has not
    given up meanwhile (then it runs the command itself): True to go on."""
    try:
        conn.settimeout(GO_TIMEOUT_S)
        conn.sendall(protocol.encode({"pid": os.getpid()}))
        answer = protocol.LineReader(conn).next()
        conn.settimeout(None)
    except (OSError, ValueError):
        return False
    return answer is not None and answer.get("go") is True


CLIENT_GONE_GRACE_S = 10.0
"""How long a command whose client went away may take to end after each signal."""


def watch_client(conn: socket.socket, answered: threading.Event) -> None:
    """Watch the client's connection from a thread: a client gone before the answer (killed,
    its terminal closed) interrupts the command as Ctrl-C would (SIGINT to this process), so
    the model call is cancelled and the partial reply kept as interrupted; a command still
    running `CLIENT_GONE_GRACE_S` later (an MCP session whose host keeps the pipes open) gets
    SIGTERM, then SIGKILL: what it stored is committed, the rest rolled back."""

    def wait() -> None:
        with contextlib.suppress(OSError):
            while conn.recv(4096):
                pass
        for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            if answered.is_set():
                return
            with contextlib.suppress(OSError):
                os.kill(os.getpid(), signum)
            answered.wait(CLIENT_GONE_GRACE_S)

    threading.Thread(target=wait, name="client-watch", daemon=True).start()


def run(conn: socket.socket, fds: list[int], message: dict[str, Any], listener: Any) -> None:
    """The child's whole life (ends with ``os._exit``)."""
    code = 1
    try:
        with contextlib.suppress(Exception):
            if listener is not None:
                listener.close()
        rheo_home = protocol.home(message.get("env") or {})
        if not handshake(conn):
            return  # the client gave up waiting and runs the command itself
        argv = take_on(fds, message)
        from . import background

        signal.signal(signal.SIGUSR1, background.note_stopping)
        if protocol.command_of(argv) != "mcp":
            background.defer()  # after the answer; an MCP session hands each turn's work over
        answered = threading.Event()
        watch_client(conn, answered)
        code = run_command()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        answered.set()
        with contextlib.suppress(OSError):
            conn.sendall(protocol.encode({"exit": code}))
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)  # wakes the watching thread
        conn.close()
        _detach(rheo_home)
        background.after_request(rheo_home)
    except BaseException:  # noqa: BLE001 - a child must never return into the server loop
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        os._exit(0)


def work(conn: socket.socket, message: dict[str, Any], listener: Any) -> None:
    """The whole life (ends with ``os._exit``) of a process forked for memory work a command
    handed over (`rheo_cli.resident.client.hand_work`): default signal handling (the resident
    stopping — SIGUSR1 — or SIGTERM ends it at once; a job it held is taken over by the next
    runner), the command's environment, folder and umask, stdin and stdout on /dev/null and
    stderr to the resident's log; then the queued jobs and the session watcher
    (`background.run_handed`)."""
    try:
        for sig in (
            signal.SIGTERM,
            signal.SIGHUP,
            signal.SIGINT,
            signal.SIGQUIT,
            signal.SIGCHLD,
            signal.SIGUSR1,
        ):
            signal.signal(sig, signal.SIG_DFL)
        with contextlib.suppress(Exception):
            if listener is not None:
                listener.close()
        conn.close()  # the server answers the command
        take_on_env(message)
        rheo_home = protocol.home(os.environ)
        _detach(rheo_home)
        from . import background

        background.run_handed(rheo_home)
    except BaseException:  # noqa: BLE001 - a child must never return into the server loop
        with contextlib.suppress(Exception):
            traceback.print_exc()
    finally:
        os._exit(0)
