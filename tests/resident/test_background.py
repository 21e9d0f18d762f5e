"""The resident's memory work: a session's digest is written when the session closes, with
no command run after its last message."""

from __future__ import annotations

import json
import time

import pytest
from fakeapi import text
from helpers import db_rows, facts_reply, kind_of, request_text


def _handler(rec):
    kind = kind_of(rec)
    if kind == "extract":
        return facts_reply({"topic": "city", "label": "Lives in Porto", "confidence": 0.9})
    if kind == "digest":
        return text(json.dumps({"narrative": "They talked about moving to Porto.", "facts": []}))
    return text("Porto is lovely.")


@pytest.mark.slow
def test_the_digest_is_written_at_session_close_without_another_message(resident, api, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[session]\ngap_hours = 0.01\n")  # closes after 36 s
    resident.env.pop("RHEO_WORKER")  # memory work on, as people run rheo
    resident.ready()
    api.handler = _handler
    asked = resident.run("ask", "I am moving to Porto")
    assert asked.returncode == 0, asked.stderr
    closes = time.monotonic() + 36
    digests: list = []
    while time.monotonic() < closes + 60 and not digests:
        time.sleep(1)
        digests = db_rows(home, "SELECT narrative FROM digests")
    assert digests, "no digest was written after the session closed"
    assert time.monotonic() >= closes - 3  # not before the session closed
    assert "Porto" in digests[0]["narrative"]
    kinds = [kind_of(r) for r in api.message_requests]
    assert kinds.count("chat") == 1 and "extract" in kinds
    later = resident.run("ask", "where were we?")  # after the pause: the digest is in context
    assert later.returncode == 0, later.stderr
    chats = [r for r in api.message_requests if kind_of(r) == "chat"]
    assert "They talked about moving to Porto." in request_text(chats[-1])
