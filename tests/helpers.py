"""Helpers for tests: subprocess runs, direct database reads, request text."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import netguard

REPO = Path(__file__).resolve().parent.parent
LOCOMO = REPO.parent / "shared" / "bench" / "locomo10.json"


def run_rheo(
    *args: str,
    input: bytes | str | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m rheo_cli ARGS`` in a subprocess with the network guard installed."""
    full = netguard.subprocess_env({**os.environ, **(env or {})})
    data = input.encode() if isinstance(input, str) else input
    return subprocess.run(
        [sys.executable, "-m", "rheo_cli", *args],
        input=data,
        env=full,
        capture_output=True,
        timeout=timeout,
        cwd=str(REPO),
    )


def db_rows(home: Path, sql: str, args: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
    """Read rows straight from the test's database."""
    conn = sqlite3.connect(home / "rheo.db")
    conn.row_factory = sqlite3.Row
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def request_text(recorded: Any) -> str:
    """All text the request carried: system blocks and every message's text blocks."""
    body = recorded.body
    parts = [b["text"] for b in body.get("system", []) if isinstance(b, dict)]
    for msg in body["messages"]:
        content = msg["content"]
        if isinstance(content, str):
            parts.append(content)
            continue
        for block in content:
            if block.get("type") == "text":
                parts.append(block["text"])
    return "\n".join(parts)
