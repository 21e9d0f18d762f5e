"""A request forked from the resident finds everything it needs already imported and built:
after the resident's `warm`, a whole `rheo ask` (through the real SDK to the fake Messages API)
and a whole `rheo mcp` session import no module and make the SDK build no pydantic class —
work that would otherwise be paid again in every forked request, before its request leaves."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import netguard
import pytest
from fakeapi import FakeAnthropic, text
from helpers import REPO, mcp_session

pytestmark = pytest.mark.resident

PROBE = r"""
import atexit, json, os, sys
import pydantic._internal._generics as generics

from rheo_cli.resident.warm.server import warm

warm()
built = []
original = generics.create_generic_submodel


def spy(name, *args):
    built.append(name)
    return original(name, *args)


generics.create_generic_submodel = spy
before = set(sys.modules)


def report():
    late = sorted(set(sys.modules) - before)
    with open(os.environ["PROBE_OUT"], "w") as out:
        json.dump({"modules": late, "generics": built}, out)


atexit.register(report)
sys.argv = ["rheo", *sys.argv[1:]]
from rheo_cli.cli.main import main

main()
"""

MCP_SESSION = mcp_session(
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "memory_list"}},
    {
        "jsonrpc": "2.0",
        "id": 4,
        "method": "tools/call",
        "params": {"name": "context", "arguments": {"query": "the trip"}},
    },
)


def probe(tmp_path: Path, env: dict[str, str], *args: str, stdin: str = "") -> dict[str, list]:
    """What ``rheo ARGS`` imported and built after `warm`, in a fresh interpreter."""
    out = tmp_path / "probe.json"
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    full = netguard.subprocess_env({**env, "PROBE_OUT": str(out), "RHEO_RESIDENT": "0"})
    proc = subprocess.run(
        [sys.executable, str(script), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=full,
        cwd=str(REPO),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


def test_an_ask_after_warm_imports_nothing_and_builds_no_class(tmp_path: Path, home: Path) -> None:
    import os

    with FakeAnthropic() as api:
        api.default = text("Lisbon.", chunks=3)
        env = {
            **os.environ,
            "ANTHROPIC_BASE_URL": api.base_url,
            "ANTHROPIC_API_KEY": "test-key",
        }
        seen = probe(tmp_path, env, "ask", "What is the capital of Portugal?")
        assert [r for r in api.requests if r.method == "POST"], "the ask reached no model"
    assert seen == {"modules": [], "generics": []}


def test_an_mcp_session_after_warm_imports_nothing(tmp_path: Path, home: Path) -> None:
    import os

    seen = probe(tmp_path, dict(os.environ), "mcp", stdin=MCP_SESSION)
    assert seen["modules"] == []


def test_the_thin_client_loads_the_standard_library_alone_and_not_typing() -> None:
    """What every warm ``rheo ask`` pays before its request leaves: only standard-library
    modules, and not `typing` (about 10 ms of a 0.15 s budget)."""
    code = (
        "import sys; before = set(sys.modules); "
        "import rheo_cli.entry, rheo_cli.resident.client; "
        "print('\\n'.join(sorted(set(sys.modules) - before)))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=str(REPO), timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    loaded = proc.stdout.split()
    assert "rheo_cli.resident.client" in loaded
    outside = [
        m
        for m in loaded
        if m.split(".")[0] not in sys.stdlib_module_names and m.split(".")[0] != "rheo_cli"
    ]
    assert outside == []
    assert "typing" not in loaded
