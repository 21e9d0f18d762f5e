"""How soon rheo reaches the model: ``rheo ask`` from process start to the first request at
a local fake Messages API and to the last byte of the reply, cold (every import paid, as
with ``RHEO_RESIDENT=0``) and warm (through the resident); ``rheo mcp`` from start to its
``initialize`` answer, cold and warm; and the ``llm`` CLI (with its llm-anthropic plugin)
against the same server, when ``--llm PATH`` names its executable.

    .venv/bin/python bench/resident.py --runs 7 [--llm /tmp/llm-venv/bin/llm]

Each row is a new process; the rows take turns, so a change of the machine's load falls on
all of them alike. Prints the median, fastest and slowest (ms), and the load average.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))

from fakeapi import FakeAnthropic, text  # noqa: E402

from rheo_cli.resident import control  # noqa: E402

REPLY = "The capital of Portugal is Lisbon."
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}

Sample = tuple[float, float]
"""Seconds from process start to the first request at the server, and to the end."""


def ask(api: FakeAnthropic, command: list[str], env: dict[str, str]) -> Callable[[], Sample]:
    """A run of ``command`` (a one-shot question) timed against ``api``."""

    def run() -> Sample:
        seen = len(api.requests)
        start = time.monotonic()
        proc = subprocess.run(command, env=env, capture_output=True, text=True, cwd=str(REPO))
        end = time.monotonic()
        if proc.returncode != 0 or REPLY not in proc.stdout:
            raise SystemExit(f"{command[:3]} failed ({proc.returncode}): {proc.stderr.strip()}")
        arrived = [r.received_at for r in api.requests[seen:] if r.method == "POST"]
        return (arrived[0] - start if arrived else float("nan")), end - start

    return run


def mcp(env: dict[str, str]) -> Callable[[], Sample]:
    """A run of ``rheo mcp`` to its ``initialize`` answer (both figures are that time)."""

    def run() -> Sample:
        start = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-m", "rheo_cli", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=str(REPO),
            env=env,
        )
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write((json.dumps(INITIALIZE) + "\n").encode())
        proc.stdin.flush()
        line = proc.stdout.readline()
        elapsed = time.monotonic() - start
        if json.loads(line or b"{}").get("id") != 1:
            raise SystemExit("rheo mcp did not answer initialize")
        proc.stdin.close()
        proc.wait(timeout=60)
        return elapsed, elapsed

    return run


def wait_for_resident(home: str, env: dict[str, str]) -> None:
    """Start the resident of ``home`` (one in-process ask starts it) and wait until it
    answers."""
    deadline = time.monotonic() + 300
    while control.ask(home, "status") is None:
        if time.monotonic() > deadline:
            raise SystemExit("the resident did not start")
        time.sleep(0.5)


def measure(rows: list[tuple[str, Callable[[], Sample]]], runs: int) -> dict[str, list[Sample]]:
    """Samples of each row over ``runs`` rounds, after one warm-up round."""
    for _, run in rows:
        run()
    samples: dict[str, list[Sample]] = {name: [] for name, _ in rows}
    for _ in range(runs):
        for name, run in rows:
            samples[name].append(run())
    return samples


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per row")
    parser.add_argument("--llm", help="the llm executable (with llm-anthropic installed)")
    args = parser.parse_args()
    # rheo's own bytecode, as an installed rheo has it (pip compiles what it installs; an
    # editable checkout under PYTHONDONTWRITEBYTECODE=1 would compile every module in every
    # process, and llm, installed by pip, would not)
    compileall.compile_dir(str(REPO / "rheo_cli"), quiet=1)
    home = tempfile.mkdtemp(prefix="rheo-bench-resident-")
    with FakeAnthropic() as api:
        api.default = text(REPLY, chunks=3)
        base = {
            **os.environ,
            "RHEO_HOME": home,
            "RHEO_WORKER": "off",
            "ANTHROPIC_BASE_URL": api.base_url,
            "ANTHROPIC_API_KEY": "bench-key",
        }
        cold = {**base, "RHEO_RESIDENT": "0"}
        warm = {**base, "RHEO_RESIDENT": "1"}
        rheo = [sys.executable, "-m", "rheo_cli", "ask"]
        subprocess.run([*rheo, "hello"], env=warm, capture_output=True, cwd=str(REPO))
        wait_for_resident(home, warm)
        rows = [
            ("rheo ask, cold (RHEO_RESIDENT=0)", ask(api, [*rheo, "capital?"], cold)),
            ("rheo ask, warm (resident)", ask(api, [*rheo, "capital?"], warm)),
            ("rheo mcp -> initialize, cold", mcp(cold)),
            ("rheo mcp -> initialize, warm", mcp(warm)),
        ]
        if args.llm:
            llm_env = {**base, "LLM_USER_PATH": tempfile.mkdtemp(prefix="rheo-bench-llm-")}
            command = [args.llm, "-m", "claude-sonnet-4.5", "--no-stream", "capital?"]
            rows.append(("llm -m claude-sonnet-4.5 (llm-anthropic)", ask(api, command, llm_env)))
        before = os.getloadavg()
        samples = measure(rows, args.runs)
        after = os.getloadavg()
        control.ask(home, "stop")
    print(f"{'':42} {'start -> request (ms)':>26}   {'start -> end (ms)':>26}")
    print(
        f"{'':42} {'median':>8} {'fastest':>8} {'slowest':>8}   {'median':>8} {'min':>8} {'max':>8}"
    )
    for name, _ in rows:
        first = [s[0] * 1000 for s in samples[name]]
        last = [s[1] * 1000 for s in samples[name]]
        print(
            f"{name:42} {statistics.median(first):8.0f} {min(first):8.0f} {max(first):8.0f}"
            f"   {statistics.median(last):8.0f} {min(last):8.0f} {max(last):8.0f}"
        )
    print(
        f"{args.runs} runs per row; load average (1 min) before {before[0]:.2f}, after "
        f"{after[0]:.2f}; {os.cpu_count()} cores; Python {sys.version.split()[0]}"
    )


if __name__ == "__main__":
    main()
