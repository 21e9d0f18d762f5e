"""Helpers of the real-client tests: the environment Claude Code runs in, its events."""

from __future__ import annotations

import json
import os
from pathlib import Path

import netguard
from fakeapi import FakeAnthropic

QUIET = {
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
}
"""Claude Code's own outside traffic off: the nonessential traffic (which covers the other
three) and, to be sure, the autoupdater, telemetry and error reports one by one."""


def claude_env(api: FakeAnthropic, home: Path, rheo_home: Path, bin_dir: Path) -> dict[str, str]:
    """The environment for rheo (and the real Claude Code it runs): the fake API, a dummy
    key, Claude Code's HOME and config folder, rheo's home, the traced ``claude`` first on
    PATH, the network guard for Python children (``rheo mcp``)."""
    env = {
        "PATH": os.pathsep.join([str(bin_dir), os.environ.get("PATH", "")]),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": api.base_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-dummy",
        "RHEO_HOME": str(rheo_home),
        "RHEO_WORKER": "off",
        "LANG": "C.UTF-8",
        **QUIET,
    }
    return netguard.subprocess_env(env)


def events(stdout: bytes | str) -> list[dict[str, object]]:
    """The stream-json events of a run."""
    text = stdout.decode() if isinstance(stdout, bytes) else stdout
    return [json.loads(line) for line in text.splitlines() if line.strip()]
