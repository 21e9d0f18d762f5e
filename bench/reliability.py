"""Concurrency under load: P processes × N `rheo ask` against the local fake Messages API, with a
REPL, a looping `rheo maintain` and the detached workers the asks spawn, all at once on one
profile. Then counts what was lost, duplicated or mispaired, "database is locked" errors, and
how many times each background job called the model.

    .venv/bin/python bench/reliability.py --processes 4 --turns 250      # RELIABILITY.md
    .venv/bin/python bench/reliability.py --processes 4 --turns 10       # a quick look

Prints one JSON object of figures; exit 0 when every figure is as it should be. The pytest
`tests/cli/test_concurrency.py` runs the same scenario with fewer turns.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))
import netguard
from fakeapi import FakeAnthropic, text

NEW_EVERY = 25
"""Every this many asks a process starts a new session (closing one: a digest job)."""


def _question_of(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    last = content[-1]["text"] if isinstance(content, list) else content
    return str(last).rsplit("---\n", 1)[-1]


def _handler(extract_calls: Counter[str], digest_calls: Counter[str], lock: threading.Lock) -> Any:
    def handle(rec: Any) -> Any:
        system = " ".join(b.get("text", "") for b in rec.body.get("system", []))
        user = rec.body["messages"][0]["content"]
        user_text = user if isinstance(user, str) else " ".join(b["text"] for b in user)
        if system.startswith("You extract durable facts"):
            marker = user_text.rsplit("Assistant: ", 1)[-1].strip()
            with lock:
                extract_calls[marker] += 1
            return text('{"facts": []}')
        if system.startswith("You summarise one finished"):
            first = user_text.splitlines()[0]
            with lock:
                digest_calls[user_text] += 1
            return text(json.dumps({"narrative": f"A session ({first}).", "facts": []}))
        return text(f"re: {_question_of(rec.body)}", chunks=3)

    return handle


def _env(api: FakeAnthropic, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RHEO_", "ANTHROPIC_"))}
    env.update(ANTHROPIC_BASE_URL=api.base_url, ANTHROPIC_API_KEY="test-key", RHEO_HOME=str(home))
    return netguard.subprocess_env(env)


def _asker(env: dict[str, str], p: int, turns: int, errors: list[str], codes: list[int]) -> None:
    for n in range(turns):
        args = [sys.executable, "-m", "rheo_cli", "ask", f"p{p} q{n}"]
        if n and n % NEW_EVERY == 0:
            args.append("--new")
        proc = subprocess.run(args, env=env, cwd=str(REPO), capture_output=True, timeout=600)
        codes.append(proc.returncode)
        if proc.returncode != 0 or proc.stderr:
            errors.append(proc.stderr.decode(errors="replace").strip())


def _maintainer(
    env: dict[str, str], stop: threading.Event, errors: list[str], runs: list[int]
) -> None:
    while not stop.is_set():
        proc = subprocess.run(
            [sys.executable, "-m", "rheo_cli", "maintain"],
            env=env,
            cwd=str(REPO),
            capture_output=True,
            timeout=600,
        )
        runs.append(proc.returncode)
        if proc.returncode != 0 or proc.stderr:
            errors.append(proc.stderr.decode(errors="replace").strip())
        stop.wait(0.5)


def _repl(home: Path, api: FakeAnthropic, turns: int, errors: list[str]) -> None:
    """A REPL in this process (prompt-toolkit's pipe input), sending ``turns`` messages."""
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from rheo_cli.app import app as runtime
    from rheo_cli.repl.app import run_repl

    os.environ.update(ANTHROPIC_BASE_URL=api.base_url, ANTHROPIC_API_KEY="test-key")
    os.environ["RHEO_WORKER"] = "off"
    environ = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RHEO_")},
        "RHEO_HOME": str(home),
        "RHEO_WORKER": "off",
    }
    out = io.StringIO()
    rt = runtime.build(environ=environ)
    try:
        with create_pipe_input() as pipe:
            pipe.send_text("".join(f"repl q{n}\r" for n in range(turns)) + "\x04")
            run_repl(rt, input=pipe, output=DummyOutput(), out=out, rendered=False)
    except Exception as exc:  # noqa: BLE001 - counted as an error
        errors.append(f"repl: {type(exc).__name__}: {exc}")
    finally:
        rt.close()
    shown = out.getvalue()
    errors.extend(ln for ln in shown.splitlines() if ln.startswith("rheo:"))
    if turns and f"re: repl q{turns - 1}" not in shown:
        errors.append(f"repl: the last reply never came: {shown[-300:]!r}")


def _wait_idle(home: Path, timeout: float) -> None:
    """Until no detached worker holds the lock and no job is pending or running."""
    import fcntl

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(home / "worker.lock", "a") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
                free = True
            except OSError:
                free = False
        conn = sqlite3.connect(home / "rheo.db")
        busy = conn.execute(
            "SELECT count(*) FROM jobs WHERE status IN ('pending', 'running')"
        ).fetchone()[0]
        conn.close()
        if free and busy == 0:
            return
        time.sleep(0.5)


def run(processes: int, turns: int, repl_turns: int, home: Path) -> dict[str, Any]:
    """Run the scenario in ``home`` and return its figures (see `main`)."""
    extract_calls: Counter[str] = Counter()
    digest_calls: Counter[str] = Counter()
    lock = threading.Lock()
    errors: list[str] = []
    codes: list[int] = []
    maintain_runs: list[int] = []
    started = time.monotonic()
    with FakeAnthropic() as api:
        api.handler = _handler(extract_calls, digest_calls, lock)
        env = _env(api, home)
        subprocess.run(  # create the store first so every process starts on the same schema
            [sys.executable, "-m", "rheo_cli", "history", "recent"],
            env=env,
            cwd=str(REPO),
            capture_output=True,
            check=True,
        )
        stop = threading.Event()
        threads = [
            threading.Thread(target=_asker, args=(env, p, turns, errors, codes))
            for p in range(processes)
        ]
        maint = threading.Thread(target=_maintainer, args=(env, stop, errors, maintain_runs))
        for t in threads:
            t.start()
        maint.start()
        _repl(home, api, repl_turns, errors)
        for t in threads:
            t.join()
        stop.set()
        maint.join()
        _wait_idle(home, timeout=120)
        final = subprocess.run(
            [sys.executable, "-m", "rheo_cli", "maintain", "--json"],
            env=env,
            cwd=str(REPO),
            capture_output=True,
        )
        if final.returncode != 0 or final.stderr:
            errors.append(final.stderr.decode(errors="replace").strip())
        _wait_idle(home, timeout=60)
    elapsed = time.monotonic() - started
    return _figures(
        home,
        processes,
        turns,
        repl_turns,
        errors,
        codes,
        maintain_runs,
        extract_calls,
        digest_calls,
        elapsed,
    )


def _figures(
    home: Path,
    processes: int,
    turns: int,
    repl_turns: int,
    errors: list[str],
    codes: list[int],
    maintain_runs: list[int],
    extract_calls: Counter[str],
    digest_calls: Counter[str],
    elapsed: float,
) -> dict[str, Any]:
    conn = sqlite3.connect(home / "rheo.db")
    conn.row_factory = sqlite3.Row
    rows = conn.execute("SELECT * FROM turns ORDER BY id").fetchall()
    by_id = {r["id"]: r for r in rows}
    asked = [f"p{p} q{n}" for p in range(processes) for n in range(turns)]
    asked += [f"repl q{n}" for n in range(repl_turns)]
    users = Counter(r["content"] for r in rows if r["role"] == "user")
    lost = sum(1 for q in asked if users[q] == 0)
    duplicated = sum(c - 1 for c in users.values() if c > 1)
    replies: Counter[str] = Counter()
    mispaired = 0
    for r in rows:
        if r["role"] != "assistant":
            continue
        question = by_id.get(json.loads(r["meta"]).get("reply_to"))
        if (
            question is None
            or question["session_id"] != r["session_id"]
            or r["content"] != f"re: {question['content']}"
            or r["status"] != "ok"
        ):
            mispaired += 1
        else:
            replies[question["content"]] += 1
    unanswered = sum(1 for q in asked if replies[q] != 1)
    out_of_order = 0
    for p in [f"p{i}" for i in range(processes)] + ["repl"]:
        ids = [r["id"] for r in rows if r["role"] == "user" and r["content"].startswith(f"{p} q")]
        nums = [int(by_id[i]["content"].split("q")[-1]) for i in ids]
        out_of_order += sum(1 for a, b in zip(nums, nums[1:], strict=False) if b < a)
    bad_sessions = conn.execute(
        "SELECT count(*) FROM sessions s WHERE s.turns != (SELECT count(*) FROM turns t "
        "WHERE t.session_id = s.id)"
    ).fetchone()[0]
    jobs = conn.execute("SELECT * FROM jobs").fetchall()
    unfinished = [
        {k: j[k] for k in ("id", "kind", "status", "attempts", "last_error", "leased_by")}
        for j in jobs
        if j["status"] != "done"
    ]
    extract_jobs = [j for j in jobs if j["kind"] == "extract"]
    digest_jobs = [j for j in jobs if j["kind"] == "digest"]
    answered_ids = [
        r["id"] for r in rows if r["role"] == "assistant" and r["content"].startswith("re: ")
    ]
    runs_per_reply = [extract_calls[by_id[i]["content"]] for i in answered_ids]
    integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
    conn.close()
    log = (
        (home / "worker.log").read_text(errors="replace") if (home / "worker.log").exists() else ""
    )
    locked = sum("locked" in e.lower() for e in errors) + log.lower().count("locked")
    return {
        "processes": processes,
        "turns_per_process": turns,
        "repl_turns": repl_turns,
        "asked": len(asked),
        "lost": lost,
        "duplicated": duplicated,
        "mispaired": mispaired,
        "unanswered": unanswered,
        "out_of_order": out_of_order,
        "sessions_inconsistent": bad_sessions,
        "database_locked": locked,
        "failed_commands": sum(1 for c in codes + maintain_runs if c != 0),
        "errors": errors[:10],
        "worker_log_tracebacks": log.count("Traceback"),
        "maintain_runs": len(maintain_runs),
        "extract_jobs": len(extract_jobs),
        "extract_jobs_not_done": sum(1 for j in extract_jobs if j["status"] != "done"),
        "extract_calls_per_reply": dict(Counter(runs_per_reply)),
        "digest_jobs": len(digest_jobs),
        "digest_jobs_not_done": sum(1 for j in digest_jobs if j["status"] != "done"),
        "digest_calls": sum(digest_calls.values()),
        "digest_calls_repeated": sum(c - 1 for c in digest_calls.values() if c > 1),
        "unfinished_jobs": unfinished[:5],
        "integrity": integrity,
        "seconds": round(elapsed, 1),
    }


def healthy(fig: dict[str, Any]) -> bool:
    """Whether the figures show nothing lost, duplicated, locked, or run twice."""
    zero = (
        "lost",
        "duplicated",
        "mispaired",
        "unanswered",
        "out_of_order",
        "sessions_inconsistent",
        "database_locked",
        "failed_commands",
        "worker_log_tracebacks",
        "extract_jobs_not_done",
        "digest_jobs_not_done",
        "digest_calls_repeated",
    )
    return (
        all(fig[k] == 0 for k in zero)
        and not fig["errors"]
        and fig["integrity"] == "ok"
        and set(fig["extract_calls_per_reply"]) == {1}
        and fig["digest_calls"] == fig["digest_jobs"]
        and fig["extract_jobs"] == fig["asked"]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--turns", type=int, default=250, help="asks per process")
    parser.add_argument("--repl-turns", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fig = run(args.processes, args.turns, args.repl_turns, Path(tmp) / "home")
    print(json.dumps(fig, indent=2))
    return 0 if healthy(fig) else 1


if __name__ == "__main__":
    sys.exit(main())
