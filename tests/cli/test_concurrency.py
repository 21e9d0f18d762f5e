"""Part 1 of the reliability table: concurrent asks, a REPL, `rheo maintain` and detached workers
on one profile at once — nothing lost, duplicated or mispaired, no "database is locked", every
background job run once. RHEO_RELIABILITY_TURNS sets the asks per process (default 6; the
full run for RELIABILITY.md is `bench/reliability.py --processes 4 --turns 250`)."""

from __future__ import annotations

import json
import os
import sys

import pytest
from helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
import reliability  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.boundary]  # starts rheo processes (bench/reliability)


def test_four_processes_a_repl_maintain_and_workers_lose_nothing(home, monkeypatch):
    turns = int(os.environ.get("RHEO_RELIABILITY_TURNS", "6"))
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "RHEO_WORKER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(reliability, "NEW_EVERY", 3)  # a few sessions close: digest jobs
    fig = reliability.run(4, turns, 4, home)
    assert reliability.healthy(fig), json.dumps(fig, indent=1)
    assert fig["asked"] == 4 * turns + 4 and fig["digest_jobs"] >= 4
