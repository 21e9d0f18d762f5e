"""Two conversations at once are not crossed: six ``rheo ask`` running at
once in one profile store six questions, then six replies in whatever order the model
finished; extraction pairs each reply with the question it answers (``meta.reply_to``)."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time

import netguard
import pytest
from fakeapi import text
from helpers import REPO, api_env, db_rows, kind_of

N = 6
FINISH_ORDER = [5, 2, 1, 3, 6, 4]
"""The order in which the model "finishes" the six replies."""


def question_of(rec) -> int:
    """The question number of a chat request (its message is the text after ``---``)."""
    last = rec.body["messages"][0]["content"][-1]["text"]
    return int(re.findall(r"question (\d+)", last.rsplit("\n---\n", 1)[-1])[0])


@pytest.mark.boundary
def test_six_concurrent_asks_are_each_extracted_with_their_own_question(api, home, rheo):
    arrived = threading.Barrier(N, timeout=150)  # six processes start on two busy cores

    def handler(rec):
        kind = kind_of(rec)
        if kind == "extract":
            return text('{"facts": []}')
        n = question_of(rec)
        arrived.wait()  # all six questions are stored before any reply
        time.sleep(0.15 * FINISH_ORDER.index(n))
        return text(f"reply to question {n}")

    api.handler = handler
    env = netguard.subprocess_env(api_env(api, home, RHEO_WORKER="off"))
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "rheo_cli", "ask", f"This is question {n}, please answer."],
            env=env,
            cwd=str(REPO),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(1, N + 1)
    ]
    outs = [p.communicate(timeout=240) for p in procs]
    for proc, (_out, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err.decode()
    for n, (out, _) in enumerate(outs, start=1):
        assert out.decode().strip() == f"reply to question {n}"
    roles = [r[0] for r in db_rows(home, "SELECT role FROM turns ORDER BY id")]
    assert roles == ["user"] * N + ["assistant"] * N  # the everyday interleaving

    done = rheo("maintain", "--json")
    assert done.exit_code == 0, done.output
    jobs = db_rows(home, "SELECT status, last_error FROM jobs WHERE kind = 'extract'")
    assert [tuple(j) for j in jobs] == [("done", None)] * N
    extracted = [r for r in api.message_requests if kind_of(r) == "extract"]
    assert len(extracted) == N
    for rec in extracted:
        exchange = rec.body["messages"][0]["content"][0]["text"].split("Exchange:", 1)[1]
        asked = re.findall(r"Person: This is question (\d+)", exchange)
        answered = re.findall(r"Assistant: reply to question (\d+)", exchange)
        assert asked == answered and len(asked) == 1, exchange


def test_a_reply_without_reply_to_still_pairs_with_the_question_before(tmp_path):
    """Stores written before replies recorded their question (and imports) keep working."""
    from datetime import UTC, datetime

    from rheo_cli.background.extract_job import exchange_of
    from rheo_cli.memory.jobs import Job
    from rheo_cli.memory.ledger import turns as ledger
    from rheo_cli.memory.store import db

    conn = db.open_store(tmp_path / "p.db")
    now = datetime(2026, 5, 1, 9, tzinfo=UTC)
    q = ledger.append_turn(conn, profile="default", role="user", content="q", now=now, gap_s=7200)
    r = ledger.append_turn(
        conn, profile="default", role="assistant", content="a", now=now, gap_s=7200, status="ok"
    )

    class Rt:
        pass

    rt = Rt()
    rt.conn = conn  # type: ignore[attr-defined]
    job = Job(1, "default", "extract", r.turn.id, "running", 1, None, None, None, None, [], "", "")
    person, reply = exchange_of(rt, job)  # type: ignore[arg-type]
    assert (person.id, reply.id) == (q.turn.id, r.turn.id)
    conn.close()
