"""``rheo doctor``'s check of the resident rheo of RHEO_HOME: off, not running, starting,
running (pid, uptime, requests served, work processes running) or stopping; a socket file
nobody listens on (harmless: the next resident replaces it); its private folder's mode
(0700, else a problem); the last error line of its log. It asks a running resident for its
status and reads files; it never starts one."""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path

from ...memory.text.safety import redact
from ...providers.redact import environment_secrets
from ...resident import client, control, launch, protocol
from .checks import Check

NAME = "resident"
LOG_TAIL_BYTES = 64 * 1024
"""How much of the end of ``resident.log`` is searched for its last error line."""
ERROR_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*(?:Error|Exception)\b.*|rheo[\w -]*: .+)$")
"""A line of the log that says something went wrong: an exception named ...Error or
...Exception, or one of rheo's own one-line errors (``rheo worker: ...``); a traceback's last
line is one whatever its exception is called (`error_lines`)."""
TRACEBACK = "Traceback (most recent call last):"


def resident_check(home: Path, secrets: Iterable[str] = ()) -> Check:
    """The check of the resident of ``home`` (see the module's docstring); ``secrets``:
    those configuration holds, masked in what it quotes of the log as are those of the
    environment and anything shaped like a credential. Never raises."""
    rheo_home = str(home)
    try:
        parts = [_state(rheo_home)]
        folder = _folder_problem(rheo_home)
        error = last_error(rheo_home, secrets)
    except Exception as exc:  # noqa: BLE001 - doctor lists every check, whatever happens
        return Check(NAME, False, f"cannot be checked: {' '.join(str(exc).split())[:200]}")
    if folder:
        parts.append(folder)
    if error:
        parts.append(f"last error in {protocol.LOG_NAME}: {error}")
    return Check(NAME, folder is None, "; ".join(parts))


def _state(rheo_home: str) -> str:
    """What the resident is doing, in a few words."""
    answer = control.ask(rheo_home, "status")
    if not client.enabled(os.environ, rheo_home):
        off = "off (RHEO_RESIDENT or [resident] mode in config.toml)"
        if answer is not None:
            off += f", but one still runs as pid {answer.get('pid')} ('rheo resident stop')"
        return off
    if answer is not None:
        return control.running_line(answer)
    held = launch.holder(rheo_home)
    if held is not None:
        pid, state = held
        if state == "stopping":
            return f"stopping (pid {pid}: running requests get 30 s to finish)"
        return f"starting (pid {pid})"
    orphans = control.watchers(rheo_home)
    if orphans:
        pids = ", ".join(str(pid) for pid in orphans)
        return (
            f"not running; a session watcher an earlier resident left runs as pid {pids} "
            "('rheo resident stop' ends it)"
        )
    if _socket_exists(rheo_home):
        return (
            f"not running; {protocol.socket_path(rheo_home)} is left from one that ended "
            "(nobody listens: harmless, the next resident replaces it)"
        )
    return (
        "not running (the next 'rheo ask' that succeeds, 'rheo mcp', the REPL or the Telegram "
        "bot starts it)"
    )


def _socket_exists(rheo_home: str) -> bool:
    try:
        return stat.S_ISSOCK(os.lstat(protocol.socket_path(rheo_home)).st_mode)
    except OSError:
        return False


def _folder_problem(rheo_home: str) -> str | None:
    """What is wrong with ``RHEO_HOME/run`` (not a folder of this user's, readable by
    others), or None (fine, or not made yet)."""
    path = protocol.run_dir(rheo_home)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        return f"{path} is not a folder (remove it: the next resident makes its own)"
    if info.st_uid != os.getuid():
        return f"{path} belongs to another user (remove it: the next resident makes its own)"
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        return f"{path} is {mode:04o}, should be 0700 ('rheo doctor --repair' makes it private)"
    return None


def last_error(rheo_home: str, secrets: Iterable[str] = ()) -> str | None:
    """The last line of the resident's log that says something went wrong (at most 200
    characters), with ``secrets``, the environment's keys, tokens and base-URL passwords and
    anything shaped like a credential masked; None when there is none or no log."""
    path = os.path.join(protocol.run_dir(rheo_home), protocol.LOG_NAME)
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - LOG_TAIL_BYTES))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return None
    found = error_lines(tail.splitlines())
    if not found:
        return None
    return redact(" ".join(found[-1].split()), known_secrets(secrets))[:200]


def error_lines(lines: list[str]) -> list[str]:
    """The lines of a log that say something went wrong, in order: `ERROR_LINE`s, and the
    first unindented line after each ``Traceback`` (its exception, whatever it is called:
    ``telegram.error.InvalidToken: ...``)."""
    found: list[str] = []
    in_traceback = False
    for raw in lines:
        line = raw.strip()
        if raw.startswith(TRACEBACK):
            in_traceback = True
            continue
        if in_traceback and raw[:1] not in (" ", "\t") and line:
            found.append(line)
            in_traceback = False
        elif ERROR_LINE.match(line):
            found.append(line)
    return found


def known_secrets(configured: Iterable[str] = ()) -> list[str]:
    """Every secret doctor knows it must not show: ``configured`` ones, the environment's
    model keys and base-URL passwords (`environment_secrets`) and the Telegram bot's token
    (``RHEO_TELEGRAM_TOKEN``)."""
    telegram = os.environ.get("RHEO_TELEGRAM_TOKEN", "").strip()
    return [*configured, *environment_secrets(), *([telegram] if len(telegram) >= 8 else [])]
