"""The thin side of ``rheo ask`` and ``rheo mcp``, standard library only: hand the command
to the resident (arguments, environment, working folder and the terminal's own stdin,
stdout and stderr, so output, colours and pipes behave as in-process), forward Ctrl-C and
termination signals to the process that runs it, and exit with its status. Besides, what
every other command uses: `hand_work` (the memory work after a reply, in place of a new
worker process) and `start_if_enabled` (the REPL and the Telegram bot as they start).

`run` returns None whenever the command should run in this process instead: the resident
is off (``RHEO_RESIDENT=0``, ``[resident] mode = "off"``), not running (it is started for the
next command once this one got past its own checks: the caller's ``later``, which
``entry.py`` makes `rheo_cli.ready`'s, so an ask that fails for want of a provider, a
readable config.toml or right arguments starts none), stale, of another build, or
unreachable. Once the resident has taken the
request, falling back would store the question twice, so a resident that dies mid-answer
ends the command with one line and status 1.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
from collections.abc import Callable

from . import protocol

TYPE_CHECKING = False  # as `typing.TYPE_CHECKING`, without importing `typing` (~10 ms)
if TYPE_CHECKING:
    from typing import Any

OFF_WORDS = {"0", "off", "false", "no"}
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
CONNECT_TIMEOUT_S = 2.0
ANSWER_TIMEOUT_S = 5.0
"""How long the client waits for the resident to take its request before running it
itself; the request's process goes on only once the client said so (``{"go": true}``), so
the command never runs twice."""
WORK_TIMEOUT_S = 2.0
"""How long a command waits for the resident to take its memory work (`hand_work`) before
it starts a worker process of its own."""


Later = Callable[[Callable[[], None]], None]
"""What runs a callback once the in-process command got past its own checks
(`rheo_cli.ready.when_reached`)."""


def start_later(rheo_home: str, later: Later) -> None:
    """Start a resident for ``rheo_home`` once the in-process command is past its own checks
    (``later``), not before: a command that fails would leave a resident behind for
    nothing."""
    from . import launch

    def start() -> None:
        launch.start(rheo_home)

    later(start)


def enabled(environ: Any, rheo_home: str) -> bool:
    """Whether rheo may use a resident: ``RHEO_RESIDENT`` wins, then config.toml's
    ``[resident] mode``; on when neither says. A config.toml that does not parse: off (the
    in-process command reports it)."""
    flag = environ.get("RHEO_RESIDENT", "").strip().lower()
    if flag:
        return flag not in OFF_WORDS
    path = os.path.join(rheo_home, "config.toml")
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    if b"resident" not in raw:
        return True
    try:
        import tomllib

        table = tomllib.loads(raw.decode()).get("resident", {})
    except (ValueError, UnicodeDecodeError):
        return False
    mode = table.get("mode", "on") if isinstance(table, dict) else "on"
    return str(mode).strip().lower() not in OFF_WORDS


def start_if_enabled(rheo_home: str) -> bool:
    """Start a resident for ``rheo_home`` when rheo may use one (`enabled`) and none runs or
    is starting; True when one was started. The REPL and the Telegram bot call it as they
    start, so that the memory work after their first reply finds it ready. Never raises."""
    try:
        from . import launch

        return enabled(os.environ, rheo_home) and launch.start(rheo_home)
    except Exception:  # noqa: BLE001 - without a resident the worker runs as a process
        return False


def _umask() -> int:
    umask = os.umask(0o077)
    os.umask(umask)
    return umask


def hand_work(rheo_home: str, env: dict[str, str]) -> bool:
    """Hand a command's memory work to the resident of ``rheo_home``: one connection, one
    request line (``op`` ``work``: ``env`` — this process's environment with
    ``RHEO_PROFILE`` and ``RHEO_PROVIDER`` set as for a worker process —, the working folder,
    umask and build stamp; no descriptors) and one line back. The resident forks a process
    that takes on ``env`` for itself alone, runs the queued jobs and then watches the
    profile's session (digest at its close). True when it took the work; False when none
    runs there, it does not answer within `WORK_TIMEOUT_S`, or it runs another build (it then
    retires): the caller starts a worker process instead. Never raises."""
    try:
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with sock:
            sock.settimeout(WORK_TIMEOUT_S)
            sock.connect(protocol.socket_path(rheo_home))
            message = {
                "op": "work",
                "env": env,
                "cwd": cwd,
                "umask": _umask(),
                "stamp": protocol.stamp(),
            }
            sock.sendall(protocol.encode(message))
            answer = protocol.LineReader(sock).next()
    except Exception:  # noqa: BLE001 - none there, too slow, or unreadable: a worker process
        return False
    return answer is not None and isinstance(answer.get("working"), int)


def _streams() -> list[list[str | None]]:
    """Encoding and error handler of this process's stdin, stdout and stderr."""
    out = []
    for stream in (sys.stdin, sys.stdout, sys.stderr):
        out.append([getattr(stream, "encoding", None), getattr(stream, "errors", None)])
    return out


def request(argv: list[str]) -> dict[str, Any]:
    """The request message for ``argv`` (the arguments after ``rheo``)."""
    try:
        cwd: str | None = os.getcwd()
    except OSError:
        cwd = None
    return {
        "argv": argv,
        "env": dict(os.environ),
        "cwd": cwd,
        "umask": _umask(),
        "stamp": protocol.stamp(),
        "streams": _streams(),
    }


def connect(rheo_home: str) -> socket.socket:
    """A connection to the resident of ``rheo_home``. Raises OSError (FileNotFoundError or
    ConnectionRefusedError: none runs there)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT_S)
        sock.connect(protocol.socket_path(rheo_home))
    except BaseException:
        sock.close()
        raise
    return sock


def _send(sock: socket.socket, data: bytes) -> None:
    """Send ``data`` with descriptors 0, 1 and 2 attached to its first byte."""
    sent = socket.send_fds(sock, [data], [0, 1, 2])
    if sent < len(data):
        sock.sendall(data[sent:])


def _streams_open() -> bool:
    try:
        for fd in (0, 1, 2):
            os.fstat(fd)
    except OSError:
        return False
    return True


def run(argv: list[str], later: Later, *, asking: bool = True) -> int | None:
    """Run ``rheo ARGV`` in the resident and return its exit status; None: run it here
    (see the module's docstring; ``later`` starts a resident for the next command once this
    one got past its checks; ``asking``: the command sends a question, which a resident
    dying mid-answer leaves for ``--retry``). Never raises but for KeyboardInterrupt before
    the request left."""
    rheo_home = protocol.home()
    if not enabled(os.environ, rheo_home) or not _streams_open():
        return None
    try:
        sock = connect(rheo_home)
    except (FileNotFoundError, ConnectionRefusedError):
        start_later(rheo_home, later)
        return None
    except OSError:
        return None
    with sock:
        try:
            _send(sock, protocol.encode(request(argv)))
            sock.settimeout(ANSWER_TIMEOUT_S)
            reader = protocol.LineReader(sock)
            first = reader.next()
            if first is None or "pid" not in first:
                if first is not None and "mismatch" in first:
                    start_later(rheo_home, later)  # the old one retires; a new one serves the next
                return None
            sock.sendall(protocol.encode({"go": True}))  # from now on it is the resident's
            sock.settimeout(None)
        except (OSError, ValueError):  # no answer in time (busy, stopped): ours to run
            return None
        return _follow(reader, int(first["pid"]), asking=asking)


def _follow(reader: protocol.LineReader, pid: int, *, asking: bool) -> int:
    """Wait for the exit status of the request running as ``pid``, forwarding signals."""

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    try:
        message = reader.next()
    except (OSError, ValueError):
        message = None
    if message is None or not isinstance(message.get("exit"), int):
        if os.isatty(1) and os.isatty(2):
            _say("")  # the reply may have stopped mid-line on the same terminal
        _say(
            "rheo: the resident process stopped before the command ended"
            + (
                "; a question it stored is kept: 'rheo ask --retry' sends it again"
                if asking
                else ""
            )
        )
        return 1
    return int(message["exit"])


def _say(line: str) -> None:
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
