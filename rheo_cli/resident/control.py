"""``rheo resident status|stop``, standard library only: what the resident of RHEO_HOME is
doing, and stopping it (running requests finish; sessions waiting to close are left to the
next resident, or to the next message)."""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from . import client, launch, protocol

USAGE = "usage: rheo resident status [--json] | stop"


def ask(rheo_home: str, op: str) -> dict[str, Any] | None:
    """Send ``{"op": op}`` to the resident and return its answer; None when none answers."""
    try:
        sock = client.connect(rheo_home)
    except OSError:
        return None
    with sock:
        try:
            sock.sendall(protocol.encode({"op": op}))
            return protocol.LineReader(sock).next()
        except (OSError, ValueError):
            return None


def describe(answer: dict[str, Any] | None, rheo_home: str) -> str:
    """One or two lines about the resident for people."""
    if not client.enabled(os.environ, rheo_home):
        off = "off (RHEO_RESIDENT or [resident] mode in config.toml)"
        return f"resident: {off}" + (" but one still runs" if answer else "")
    if answer is None:
        starting = launch.running(rheo_home)
        return (
            "resident: starting" if starting else "resident: not running (starts on the next ask)"
        )
    up = time.time() - float(answer.get("since", time.time()))
    return (
        f"resident: running as pid {answer.get('pid')} for {up:.0f} s, "
        f"{answer.get('served', 0)} requests served, {answer.get('children', 0)} running; "
        f"exits after {float(answer.get('idle_s', 0)) / 60:g} min idle\n"
        f"socket: {protocol.socket_path(rheo_home)}"
    )


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
            say(json.dumps({"running": answer is not None, **(answer or {})}))
        else:
            say(describe(answer, rheo_home))
        return 0
    if args == ["stop"]:
        answer = ask(rheo_home, "stop")
        say("resident: stopping" if answer else "resident: not running")
        return 0
    sys.stderr.write(f"rheo: {USAGE}\n")
    return 2
