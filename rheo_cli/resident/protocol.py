"""What the resident and its clients agree on, standard library only: where the socket and
its lock live, the one-line JSON messages, and the build stamp that tells a client whether a
running resident runs the same code as itself.

The folder is ``RHEO_HOME/run`` (mode 0700) holding ``resident.sock`` (0600) and
``resident.lock`` (held by the running resident for its whole life). A request is one JSON
line sent with the client's stdin, stdout and stderr attached (SCM_RIGHTS); the answers are
JSON lines: ``{"pid": N}`` once a process was forked for the request (process N, the client
forwards Ctrl-C to it; it runs the command only after the client's ``{"go": true}``, which a
client that gave up waiting never sends), ``{"exit": CODE}`` at the end, or
``{"mismatch": STAMP}`` when the resident runs another build (it then retires and the
client runs the command itself).

Memory work is handed over without descriptors: ``{"op": "work", "env": {...}, "cwd": ...,
"umask": N, "stamp": ...}`` (what a detached worker would have inherited, ``RHEO_PROFILE``
and ``RHEO_PROVIDER`` set) is answered ``{"working": N}`` once process N was forked to run
the queued jobs and then watch the profile's session, or ``{"mismatch": STAMP}``. Besides,
``{"op": "status"}``, ``{"op": "stop"}``, and ``{"op": "working", "pid": N}`` from a
request's process N that answered and goes on to its memory work (counted as work from then).
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # as `typing.TYPE_CHECKING`, without importing `typing` (~10 ms)
if TYPE_CHECKING:
    from typing import Any

SOCKET_NAME = "resident.sock"
LOCK_NAME = "resident.lock"
LOG_NAME = "resident.log"
MAX_LINE = 4 * 1024 * 1024
"""The longest request line (bytes): the environment and arguments; stdin is never sent."""
STREAM_FDS = 3
"""A request carries the client's descriptors 0, 1 and 2."""
COMMANDS = ("ask", "mcp")
"""The commands a resident runs; every other one runs in the ``rheo`` process."""

_VALUE_OPTIONS = {"-p", "--profile", "-m", "--model", "-a", "--assistant", "--provider"}
"""The top-level options that take a value (skipped when looking for the command)."""


def command_of(argv: list[str]) -> str | None:
    """The subcommand named in ``argv`` (``rheo`` arguments, without the program), "" for
    none, None when help is asked for: ``["-p", "work", "ask", "mcp"]`` -> ``"ask"``."""
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in ("-h", "--help"):
            return None
        if arg in _VALUE_OPTIONS:
            skip = True
            continue
        if not arg.startswith("-"):
            return arg
    return ""


def home(environ: dict[str, str] | os._Environ[str] | None = None) -> str:
    """RHEO_HOME as `rheo_cli.paths.resolve` finds it (absolute), without importing
    platformdirs: ``$XDG_DATA_HOME/rheo`` or ``~/.local/share/rheo`` on Linux."""
    env = os.environ if environ is None else environ
    raw = env.get("RHEO_HOME", "").strip()
    if raw:
        return os.path.abspath(os.path.expanduser(raw))
    data = env.get("XDG_DATA_HOME", "").strip()
    if not data or not os.path.isabs(data):
        data = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(data, "rheo")


def run_dir(rheo_home: str) -> str:
    """The resident's private folder in ``rheo_home``."""
    return os.path.join(rheo_home, "run")


def socket_path(rheo_home: str) -> str:
    """The socket a resident of ``rheo_home`` listens on."""
    return os.path.join(run_dir(rheo_home), SOCKET_NAME)


def lock_path(rheo_home: str) -> str:
    """The lock the running resident of ``rheo_home`` holds."""
    return os.path.join(run_dir(rheo_home), LOCK_NAME)


def ensure_run_dir(rheo_home: str) -> str:
    """Create ``RHEO_HOME/run`` (0700) when missing and return it. Raises OSError when it
    cannot be made private (someone else's folder, a file in the way)."""
    path = run_dir(rheo_home)
    old = os.umask(0o077)
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    finally:
        os.umask(old)
    info = os.lstat(path)
    if info.st_uid != os.getuid() or not os.path.isdir(path) or os.path.islink(path):
        raise OSError(f"{path} is not a folder of this user")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def stamp() -> str:
    """The build's identity: the newest modification time (ns) and the count of rheo's own
    ``.py`` files. A resident and a client with different stamps run different code."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    newest = 0
    count = 0
    pending = [root]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        pending.append(entry.path)
                elif entry.name.endswith(".py"):
                    count += 1
                    newest = max(newest, entry.stat().st_mtime_ns)
    return f"{count}-{newest}"


def encode(message: dict[str, Any]) -> bytes:
    """One message as a JSON line (UTF-8; unpaired surrogates escaped by json)."""
    return json.dumps(message, separators=(",", ":")).encode() + b"\n"


def decode(line: bytes) -> dict[str, Any]:
    """One JSON line as a dict. Raises ValueError for anything else."""
    value = json.loads(line)
    if not isinstance(value, dict):
        raise ValueError("a message is a JSON object")
    return value


class LineReader:
    """Reads JSON lines from a connected socket (blocking)."""

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        self.buffer = b""

    def next(self) -> dict[str, Any] | None:
        """The next message; None at the end of the stream. Raises ValueError for a line too
        long or not JSON, OSError from the socket."""
        while b"\n" not in self.buffer:
            if len(self.buffer) > MAX_LINE:
                raise ValueError("message too long")
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return decode(line)
