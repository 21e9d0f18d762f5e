"""The real clients rheo is used with: Claude Code's ``claude`` and the MCP Inspector CLI,
pinned and installed from npm by ``scripts/test-clients install`` (``.ci/run`` does it, and
the first test that needs them does it too when npm is on PATH — one worker at a time, under
a lock; ``RHEO_TEST_CLIENTS=off`` stops that).

When they cannot be installed (no npm, no registry) these tests are skipped, saying why;
under ``CI=true`` a missing client fails the run instead.

Neither may reach the network. Claude Code talks to the fake Messages API
(``ANTHROPIC_BASE_URL``, a dummy key) from a temporary HOME and ``CLAUDE_CONFIG_DIR``, with
its telemetry, error reports and update checks off. Without
``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` it looks up hosts through the machine's DNS
resolver at once (seen with strace); with it, 2.1.197 and 2.1.332 connect to loopback only.
Every run is made under ``strace --seccomp-bpf -f -e trace=connect,sendto,sendmsg`` and
`Traced.check` fails the test on any address outside loopback.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import netguard
import pytest
from helpers import REPO

pytestmark = pytest.mark.realclients

INSTALL = "scripts/test-clients install"


@dataclass(frozen=True)
class Clients:
    """Where the pinned clients are: ``node`` (for the Inspector), ``claude``, ``inspector``
    (its launcher script), and their versions."""

    node: str
    claude: str
    claude_version: str
    inspector: str
    inspector_version: str


def _where() -> dict[str, str]:
    """The RHEO_TEST_* variables: from the environment, else as ``test-clients where``
    prints them (the default cache folder)."""
    out = subprocess.run(
        [str(REPO / "scripts" / "test-clients"), "where"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = dict(re.findall(r"^export (RHEO_TEST_\w+)=(.*)$", out, re.M))
    return {name: os.environ.get(name) or value for name, value in found.items()}


def _missing(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}: CI must run the real-client tests ({INSTALL})", pytrace=False)
    pytest.skip(f"{reason} (install them with {INSTALL})")


def _absent(found: dict[str, str]) -> list[str]:
    names = ("RHEO_TEST_NODE", "RHEO_TEST_CLAUDE", "RHEO_TEST_INSPECTOR")
    return [k for k in names if not found.get(k) or not Path(found[k]).exists()]


def _install() -> str:
    """Run ``scripts/test-clients install`` once for all xdist workers (a lock file in the
    temporary folder); "" when it worked, else its last line of error."""
    if os.environ.get("RHEO_TEST_CLIENTS") == "off" or shutil.which("npm") is None:
        return "npm is not on PATH" if shutil.which("npm") is None else "RHEO_TEST_CLIENTS=off"
    import fcntl
    import tempfile

    lock = Path(tempfile.gettempdir()) / "rheo-test-clients.lock"
    with lock.open("w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another worker installing: wait for it
        if not _absent(_where()) and shutil.which("strace"):
            return ""
        done = subprocess.run(
            [str(REPO / "scripts" / "test-clients"), "install"],
            capture_output=True,
            text=True,
            timeout=900,
        )
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        return lines[-1] if lines else f"exit status {done.returncode}"
    return ""


@pytest.fixture(scope="session")
def clients() -> Clients:
    """The pinned clients (installed on first use when npm is there), or a skip (a failure
    under CI=true) when they cannot be had."""
    return find_clients()


def find_clients() -> Clients:
    """The `clients` fixture's work: skips, or under ``CI=true`` fails, when a client (or
    strace) is missing and cannot be installed."""
    found = _where()
    if _absent(found) or shutil.which("strace") is None:
        problem = _install()
        if problem:
            _missing(f"the real clients could not be installed: {problem}")
        found = _where()
    absent = _absent(found)
    if absent:
        _missing(f"the real clients are not installed ({', '.join(absent)} missing)")
    if shutil.which("strace") is None:
        _missing("strace is not installed: it checks that the real clients stay on loopback")
    return Clients(
        node=found["RHEO_TEST_NODE"],
        claude=found["RHEO_TEST_CLAUDE"],
        claude_version=found["RHEO_TEST_CLAUDE_VERSION"],
        inspector=found["RHEO_TEST_INSPECTOR"],
        inspector_version=found["RHEO_TEST_INSPECTOR_VERSION"],
    )


_ADDRESS = re.compile(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"')


@dataclass
class Traced:
    """Commands run under strace, their connections logged to ``log`` (one file per
    process: ``log.PID``)."""

    log: Path
    expect_connections: bool = False
    """Set when the traced program must connect (Claude Code to the fake API)."""

    def prefix(self) -> list[str]:
        """The command line to put before a command to trace it (``--seccomp-bpf``: only
        the traced calls stop the program, so it runs at nearly full speed)."""
        calls = "trace=connect,sendto,sendmsg"
        return ["strace", "--seccomp-bpf", "-f", "-ff", "-qq", "-e", calls, "-o", str(self.log)]

    def addresses(self) -> list[str]:
        """Every IP address a traced process connected or sent to."""
        seen: list[str] = []
        for part in sorted(self.log.parent.glob(self.log.name + ".*")):
            for match in _ADDRESS.finditer(part.read_text(errors="replace")):
                seen.append(match.group(1) or match.group(2))
        return seen

    def check(self) -> None:
        """Fail unless every address is loopback (and, with `expect_connections`, strace
        saw a connection at all: the trace works)."""
        if not list(self.log.parent.glob(self.log.name + ".*")):
            return  # nothing was run under strace in this test
        seen = self.addresses()
        outside = sorted({a for a in seen if not netguard.is_allowed(a)})
        assert not outside, f"a real client tried to reach {outside}"
        if self.expect_connections:
            assert seen, "strace saw no connection at all: the trace is not working"


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[Traced]:
    """A strace log for this test, checked at its end: nothing outside loopback."""
    folder = tmp_path / "strace"
    folder.mkdir()
    tracer = Traced(folder / "net")
    yield tracer
    tracer.check()


@pytest.fixture
def claude_home(tmp_path: Path) -> Path:
    """Claude Code's HOME for this test (its ``~/.claude`` is ``CLAUDE_CONFIG_DIR``)."""
    folder = tmp_path / "person"
    (folder / ".claude").mkdir(parents=True)
    return folder


@pytest.fixture
def claude_bin(tmp_path: Path, clients: Clients, traced: Traced) -> Path:
    """A folder holding ``claude``: the real binary, run under `traced`."""
    folder = tmp_path / "claude-bin"
    folder.mkdir()
    traced.expect_connections = True
    wrapper = folder / "claude"
    wrapper.write_text(
        "#!/bin/sh\nexec " + " ".join(traced.prefix()) + f' "{clients.claude}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return folder
