"""Real input end to end: the first three sessions of a LoCoMo conversation replayed through
``rheo ask`` with the clock at each session's date.

The data (CC BY-NC 4.0, Maharana et al. 2024) is read from ../shared/bench/ and never copied
here; the test is skipped when the file is absent. One speaker is the person; the other
speaker's recorded lines are served as the model's replies by the in-process fake model.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest
from helpers import LOCOMO, db_rows, request_text

pytestmark = pytest.mark.skipif(not LOCOMO.exists(), reason="LoCoMo data not present")

NO_REPLY = "(no recorded reply)"


def locomo_date(raw: str) -> datetime:
    """``1:56 pm on 8 May, 2023`` -> aware UTC datetime."""
    return datetime.strptime(raw.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def pick_conversation() -> dict:
    """The first conversation whose first three sessions open with speaker_a and alternate,
    so every person line can be asked and every other line is a reply."""
    for sample in json.loads(LOCOMO.read_text()):
        conv = sample["conversation"]
        good = True
        for n in (1, 2, 3):
            speakers = [t["speaker"] for t in conv[f"session_{n}"]]
            good &= speakers[0] == conv["speaker_a"]
            good &= all(a != b for a, b in zip(speakers, speakers[1:], strict=False))
        if good:
            return sample
    pytest.skip("no conversation with three regular opening sessions")


def flat(text: str) -> str:
    """Whitespace collapsed: injected turns keep their words, not their line breaks."""
    return " ".join(text.split())


def line_text(turn: dict) -> str:
    body = turn["text"]
    if turn.get("blip_caption"):
        body += f" [shares a photo: {turn['blip_caption']}]"
    return body


def test_replay_three_sessions(rheo, fake_model, home, monkeypatch):
    sample = pick_conversation()
    conv = sample["conversation"]
    person = conv["speaker_a"]
    expected: list[tuple[int, str, str]] = []  # (session number, role, content)
    asked: list[tuple[int, int]] = []  # (session number, index in expected of the user turn)
    starts = {}
    for n in (1, 2, 3):
        start = locomo_date(conv[f"session_{n}_date_time"])
        starts[n] = start
        turns = conv[f"session_{n}"]
        i = 0
        while i < len(turns):
            question = turns[i]
            assert question["speaker"] == person
            has_reply = i + 1 < len(turns)
            reply = line_text(turns[i + 1]) if has_reply else NO_REPLY
            monkeypatch.setenv("RHEO_NOW", (start + timedelta(seconds=30 * i)).isoformat())
            fake_model.add(reply)
            asked.append((n, len(expected)))
            expected.append((n, "user", line_text(question)))
            expected.append((n, "assistant", reply))
            result = rheo("ask", line_text(question))
            assert result.exit_code == 0, result.stderr
            assert result.stdout == reply + "\n"
            i += 2

    rows = db_rows(home, "SELECT id, session_id, role, content, ts FROM turns ORDER BY id")
    # Every turn is in the ledger, in order.
    assert [(r["role"], r["content"]) for r in rows] == [(e[1], e[2]) for e in expected]
    # Sessions split exactly where the dates say.
    session_of = {
        n: {r["session_id"] for r, e in zip(rows, expected, strict=True) if e[0] == n}
        for n in (1, 2, 3)
    }
    assert all(len(ids) == 1 for ids in session_of.values())
    assert len({next(iter(ids)) for ids in session_of.values()}) == 3
    listed = json.loads(rheo("sessions", "list", "--json").stdout)
    assert [s["started_at"][:16] for s in reversed(listed)] == [
        starts[n].strftime("%Y-%m-%dT%H:%M") for n in (1, 2, 3)
    ]
    assert [s["turns"] for s in reversed(listed)] == [
        sum(1 for e in expected if e[0] == n) for n in (1, 2, 3)
    ]
    # A distinctive word finds its turn.
    words = Counter(w.lower() for e in expected for w in set(re.findall(r"[A-Za-z]{9,}", e[2])))
    rare = sorted(w for w, c in words.items() if c == 1)
    assert rare
    word = rare[len(rare) // 2]
    owner = next(r["id"] for r in rows if word in r["content"].lower())
    found = json.loads(rheo("history", "search", word, "--json").stdout)
    assert owner in [t["id"] for t in found]
    # Each request carried the earlier turns of its session (the last 12 at most).
    requests = fake_model.requests
    assert len(requests) == len(asked)
    for request, (n, index) in zip(requests, asked, strict=True):
        sent = flat(request_text(request))
        earlier = [e for e in expected[:index] if e[0] == n][-12:]
        for _, role, content in earlier:
            assert flat(f"{role}: {content}") in sent
        other_sessions = [e for e in expected[:index] if e[0] != n]
        content = request.messages[-1]["content"]
        injected = flat(" ".join(b["text"] for b in content if b.get("type") == "text"))
        if other_sessions and "=== CURRENT SESSION ===" in injected:
            # Another session's turns never leak into CURRENT SESSION (the first message of a
            # session has none; the previous session's end is under EPISODIC MEMORY).
            last_other = flat(f"{other_sessions[-1][1]}: {other_sessions[-1][2]}")
            assert last_other not in injected.split("=== CURRENT SESSION ===")[-1]
