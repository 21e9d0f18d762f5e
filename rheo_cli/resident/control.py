"""``rheo resident status|stop``, standard library only: what the resident of RHEO_HOME is
doing, and stopping it (running requests finish; sessions waiting to close are left to the
next resident, or to the next message)."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import sys
import time
from typing import Any

from . import client, launch, protocol

USAGE = "usage: rheo resident status [--json] | stop"
STOP_WAIT_S = 10.0
"""How long ``rheo resident stop`` waits for the resident to exit before it returns."""


def ask(rheo_home: str, op: str, **fields: Any) -> dict[str, Any] | None:
    """Send ``{"op": op, **fields}`` to the resident and return its answer; None when none
    answers."""
    try:
        sock = client.connect(rheo_home)
    except OSError:
        return None
    with sock:
        try:
            sock.sendall(protocol.encode({"op": op, **fields}))
            return protocol.LineReader(sock).next()
        except (OSError, ValueError):
            return None


def describe(answer: dict[str, Any] | None, rheo_home: str) -> str:
    """One or two lines about the resident for people."""
    if not client.enabled(os.environ, rheo_home):
        off = "off (RHEO_RESIDENT or [resident] mode in config.toml)"
        return f"resident: {off}" + (" but one still runs" if answer else "")
    if answer is None:
        held = launch.holder(rheo_home)
        if held is None:
            return (
                "resident: not running (the next 'rheo ask' that succeeds, 'rheo mcp', the "
                "REPL or the Telegram bot starts it)"
            )
        pid, state = held
        if state == "stopping":
            return f"resident: stopping (pid {pid}: running requests get 30 s to finish)"
        return f"resident: starting (pid {pid})"
    handed = _count(answer, "handed")
    return (
        f"resident: {running_line(answer)}; memory work handed over "
        f"{_plural(handed, 'time')} so far; exits after "
        f"{_number(answer, 'idle_s') / 60:g} min without a request once no work runs\n"
        f"socket: {protocol.socket_path(rheo_home)}"
    )


def running_line(answer: dict[str, Any]) -> str:
    """``running as pid N for 3 min, 2 requests served (1 now), 1 work process running`` —
    the words `rheo resident status` and `rheo doctor` share, from a status answer (fields
    missing or malformed count as 0)."""
    up = _duration(max(0.0, time.time() - (_number(answer, "since") or time.time())))
    served, working = _count(answer, "served"), _count(answer, "working")
    now = _count(answer, "answering")  # requests being answered
    return (
        f"running as pid {answer.get('pid')} for {up}, {_plural(served, 'request')} served"
        + (f" ({now} now)" if now else "")
        + f", {_plural(working, 'work process', 'work processes')} running"
    )


def _number(answer: dict[str, Any], key: str) -> float:
    try:
        return float(answer.get(key) or 0)
    except (TypeError, ValueError):
        return 0.0


def _count(answer: dict[str, Any], key: str) -> int:
    return int(_number(answer, key))


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n} {one if n == 1 else many or one + 's'}"


def _duration(seconds: float) -> str:
    """``42 s``, ``3 min``, ``2.5 h``, ``3.0 days``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def stop(rheo_home: str) -> str:
    """Stop the resident (one still starting, or not answering, gets SIGTERM) and wait up to
    `STOP_WAIT_S` for it to exit; what happened, in one line."""
    answer = ask(rheo_home, "stop")
    held = launch.holder(rheo_home)
    stopped_one = held is not None
    if answer is None and held is not None:
        with contextlib.suppress(OSError):
            os.kill(held[0], signal.SIGTERM)
    deadline = time.monotonic() + STOP_WAIT_S
    while launch.running(rheo_home) and time.monotonic() < deadline:
        time.sleep(0.1)
    held = launch.holder(rheo_home)
    if held is not None:
        return f"resident: stopping (pid {held[0]}: running requests get 30 s to finish)"
    orphans = end_orphan_watchers(rheo_home)
    said = "resident: stopped" if answer is not None or stopped_one else "resident: not running"
    if orphans:
        pids = ", ".join(str(pid) for pid in orphans)
        said += f"; ended the session watcher an earlier resident left running (pid {pids})"
    return said


def watchers(rheo_home: str) -> list[int]:
    """The pids of the processes waiting for a session to close (each holds
    ``run/watch-PROFILE.lock``), whichever resident forked them."""
    folder = protocol.run_dir(rheo_home)
    try:
        names = sorted(n for n in os.listdir(folder) if n.startswith("watch-"))
    except OSError:
        return []
    pids: list[int] = []
    for name in names:
        if not name.endswith(".lock"):
            continue
        try:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            continue  # nobody holds it
        except OSError:
            with contextlib.suppress(OSError, ValueError, IndexError):
                pids.append(int(os.pread(fd, 32, 0).split()[0]))
        finally:
            os.close(fd)
    return [pid for pid in pids if _is_rheo(pid)]


def _is_rheo(pid: int) -> bool:
    """Whether ``pid`` runs rheo (not another program that got a recycled pid)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return b"rheo_cli" in handle.read()
    except OSError:
        return False


def end_orphan_watchers(rheo_home: str) -> list[int]:
    """With no resident running: end (SIGTERM) the session watchers a resident killed
    with -9 left behind (no resident is their parent any more, so none would stop them);
    their pids. A job one of them was running keeps its lease and is taken over later."""
    if launch.running(rheo_home):
        return []
    ended = []
    for pid in watchers(rheo_home):
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
            ended.append(pid)
    return ended


def say(text: str) -> None:
    """Print ``text`` on stdout; a reader that went away (``| head -1``) ends it quietly:
    stdout then points at /dev/null, so the flush at exit does not fail either."""
    try:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
    except (BrokenPipeError, ValueError, OSError):
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass


def main(args: list[str]) -> int:
    """Run ``rheo resident ARGS``; returns the exit status (2 for a usage error)."""
    rheo_home = protocol.home()
    if args in (["-h"], ["--help"]):
        say(USAGE)
        return 0
    if args[:1] == ["status"] and args[1:] in ([], ["--json"]):
        answer = ask(rheo_home, "status")
        if args[1:] == ["--json"]:
            held = launch.holder(rheo_home) if answer is None else None
            state = {"pid": held[0], "state": held[1]} if held else {}
            say(json.dumps({"running": answer is not None, **state, **(answer or {})}))
        else:
            say(describe(answer, rheo_home))
        return 0
    if args == ["stop"]:
        say(stop(rheo_home))
        return 0
    sys.stderr.write(f"rheo: {USAGE}\n")
    return 2
