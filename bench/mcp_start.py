"""How soon a cold ``rheo mcp`` answers: a new process to its ``initialize`` result and to its
``tools/list`` result (what an MCP client such as Claude Code waits for before it can offer
rheo's tools), beside a plain Python start and the MCP SDK's import alone.

    .venv/bin/python bench/mcp_start.py --runs 15

Each run is a fresh process (the OS file cache is warm after the first); the rows take
turns, so a change of the machine's load falls on all of them alike. Prints the median, the
fastest and the slowest in ms, and the machine's load average before and after.
"""

from __future__ import annotations

import argparse
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
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}


def plain(code: str) -> Callable[[], float]:
    """Seconds for ``python -c CODE`` to run and exit."""

    def run() -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - start

    return run


def rheo_mcp(home: str, *, until: str) -> Callable[[], float]:
    """Seconds from starting ``rheo mcp`` to reading its answer to ``initialize`` (``until``
    ``initialize``) or to ``tools/list`` sent right after it (``tools``)."""
    env = {**os.environ, "RHEO_HOME": home, "RHEO_WORKER": "off", "RHEO_RESIDENT": "0"}

    def run() -> float:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "rheo_cli", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=str(REPO),
            env=env,
        )
        assert proc.stdin is not None and proc.stdout is not None
        lines = [INITIALIZE] if until == "initialize" else [INITIALIZE, INITIALIZED, TOOLS_LIST]
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines).encode())
        proc.stdin.flush()
        wanted = 1 if until == "initialize" else 2
        while True:
            line = proc.stdout.readline()
            if not line:
                raise SystemExit(f"rheo mcp ended before answering {until}")
            if json.loads(line).get("id") == wanted:
                break
        elapsed = time.perf_counter() - start
        proc.stdin.close()
        proc.wait(timeout=30)
        return elapsed

    return run


def measure(rows: list[tuple[str, Callable[[], float]]], runs: int) -> dict[str, list[float]]:
    """Milliseconds of each row over ``runs`` rounds, after one warm-up round; every round
    runs each row once, so a change of the machine's load falls on all rows alike."""
    for _, run in rows:
        run()
    samples: dict[str, list[float]] = {name: [] for name, _ in rows}
    for _ in range(runs):
        for name, run in rows:
            samples[name].append(run() * 1000)
    return samples


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="cold starts per row")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="rheo-bench-mcp-")
    rows = [
        ("python -c pass", plain("pass")),
        ("python -c 'import mcp'", plain("import mcp")),
        ("python -c 'import mcp.server.mcpserver'", plain("import mcp.server.mcpserver")),
        ("rheo mcp: start -> initialize result", rheo_mcp(home, until="initialize")),
        ("rheo mcp: start -> tools/list result", rheo_mcp(home, until="tools")),
    ]
    before = os.getloadavg()
    samples = measure(rows, args.runs)
    print(f"{'':44} {'median':>8} {'fastest':>8} {'slowest':>8}  (ms, {args.runs} runs)")
    for name, _ in rows:
        values = samples[name]
        print(f"{name:44} {statistics.median(values):8.0f} {min(values):8.0f} {max(values):8.0f}")
    after = os.getloadavg()
    print(
        f"load average (1 min) before {before[0]:.2f}, after {after[0]:.2f}; "
        f"{os.cpu_count()} cores; Python {sys.version.split()[0]}"
    )


if __name__ == "__main__":
    main()
