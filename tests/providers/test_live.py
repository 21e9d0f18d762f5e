"""Optional live test against the real Anthropic API: runs only when RHEO_LIVE_API_KEY holds a
real key (CI has none, so it is skipped there). It is the only test allowed past loopback."""

from __future__ import annotations

import json
import os

import netguard
import pytest

KEY = os.environ.get("RHEO_LIVE_API_KEY", "").strip()

pytestmark = [
    pytest.mark.skipif(not KEY, reason="set RHEO_LIVE_API_KEY to run the live test"),
    pytest.mark.boundary,  # the real API, through the SDK
]


def test_live_ask_streams_a_reply_and_stores_it(rheo, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("RHEO_WORKER", "inline")
    netguard.uninstall()
    try:
        first = rheo("ask", "--json", "Please remember: my cat is called Miso. Reply briefly.")
        assert first.exit_code == 0, first.stderr
        second = rheo("ask", "--json", "What is my cat called? One word.")
        assert second.exit_code == 0, second.stderr
    finally:
        netguard.install()
    out = json.loads(second.stdout)
    assert out["status"] == "ok" and "miso" in out["reply"].lower()
    assert out["usage"]["input_tokens"] > 0
