"""Many clients asking at once against one store: turns/s, context assembly and errors.

    python bench/concurrency.py [--backend sqlite|postgres] [--clients 8] [--turns 50]
                                [--history 10000] [--database-url URL] [--json]

One store is built with ``--history`` turns of synthetic past (the generator and bulk path of
``bench/scale.py``: sessions over 5 years, as many memory items as turns up to 10,000, 50 of
them active, up to 1,000 digests), as a SQLite
file or a fresh PostgreSQL schema (``bench/backends.py``; dropped at the end). Then
``--clients`` processes each build rheo's runtime for the same profile the way a command
does (``RHEO_HOME``, or ``RHEO_DATABASE_URL`` for PostgreSQL), open their own connection,
wait at a barrier, and all at once run ``--turns`` turns each through the real turn path
(`app.tools.chat.make_assistant`: store the message, honour memory requests, assemble the
context, call the model, record the reply, enqueue the extraction job). The model is the
in-process fake of the tests (``tests/fakeprovider.py``): no network at all, so the figure is
rheo's and the store's. Background workers are off (``RHEO_WORKER=off``); their jobs stay
queued.

Reported: turns/s over the whole run (from the barrier to the last reply), each turn's wall
time and its context assembly (p50 / p95, ms), and errors (any exception, and the turns the
ledger is missing or holds twice afterwards).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import statistics
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import scale
from backends import Stores, add_arguments, database_url

from rheo_cli.memory.store.errors import StoreError

REPLY = "Noted; here is what I remember about that."


def _pct(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def client(
    index: int, env: dict[str, str], texts: list[str], turns: int, barrier: Any, out: Any
) -> None:
    """One client process: a runtime like a command's, then ``turns`` turns after the
    barrier; puts ``{"index", "turn_ms", "context_ms", "errors", "asked"}`` on ``out``."""
    errors: list[str] = []
    turn_ms: list[float] = []
    context_ms: list[float] = []
    asked: list[str] = []
    try:
        os.environ.update(env)
        from fakeprovider import FakeProvider

        from rheo_cli.app import app as runtime
        from rheo_cli.app.tools.chat import make_assistant
        from rheo_cli.memory.context import assemble as assemble_mod

        real_assemble = assemble_mod.assemble

        def timed_assemble(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return real_assemble(*args, **kwargs)
            finally:
                context_ms.append((time.perf_counter() - started) * 1000)

        assemble_mod.assemble = timed_assemble  # type: ignore[assignment]
        fake = FakeProvider(default=REPLY)
        runtime.App.provider = lambda self: fake  # type: ignore[method-assign]
        rt = runtime.build(environ=dict(os.environ))
        assistant = make_assistant(rt)
        rt.conn  # noqa: B018 - open (and check) the store before the clock starts
    except Exception:  # noqa: BLE001 - reported, never raised
        errors.append("setup: " + traceback.format_exc(limit=3))
        barrier.wait()
        out.put({"index": index, "turn_ms": [], "context_ms": [], "errors": errors, "asked": []})
        return
    barrier.wait()
    for n in range(turns):
        message = f"{texts[(index * 7 + n) % len(texts)]} [c{index} t{n}]"
        started = time.perf_counter()
        try:
            assistant.turn(message)
            asked.append(message)
        except Exception as exc:  # noqa: BLE001 - counted
            errors.append(f"turn {n}: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}")
        turn_ms.append((time.perf_counter() - started) * 1000)
    finished = time.time()
    rt.close()
    out.put(
        {
            "index": index,
            "turn_ms": turn_ms,
            "context_ms": context_ms,
            "errors": errors,
            "asked": asked,
            "finished": finished,
        }
    )


def run(stores: Stores, clients: int, turns: int, history: int) -> dict[str, Any]:
    """Build the store, run the clients at once, check the ledger; the figures."""
    info = scale.build(stores, "rheo", history, items_count=min(10_000, history))
    texts = scale.messages(info["vocab"], random.Random(11))
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("RHEO_", "ANTHROPIC_", "OPENAI_"))
    }
    env.update(RHEO_HOME=str(stores.folder), RHEO_WORKER="off", ANTHROPIC_API_KEY="bench")
    if stores.backend == "postgres":
        env["RHEO_DATABASE_URL"] = stores.store_url("rheo")
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(clients + 1)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=client, args=(i, env, texts, turns, barrier, out))
        for i in range(clients)
    ]
    for p in procs:
        p.start()
    barrier.wait(timeout=900)  # every client has its runtime and an open store
    started = time.time()
    results = [out.get(timeout=3600) for _ in procs]
    for p in procs:
        p.join()
    elapsed = max(r.get("finished", started) for r in results) - started
    turn_ms = [x for r in results for x in r["turn_ms"]]
    context_ms = [x for r in results for x in r["context_ms"]]
    errors = [e for r in results for e in r["errors"]]
    asked = [a for r in results for a in r["asked"]]
    errors += _check_ledger(stores, asked)
    return {
        "backend": stores.backend,
        "clients": clients,
        "turns_per_client": turns,
        "history_turns": history,
        "turns": len(asked),
        "elapsed_s": round(elapsed, 3),
        "turns_per_s": round(len(asked) / elapsed, 2) if elapsed > 0 else float("nan"),
        "turn_p50_ms": round(_pct(turn_ms, 50), 2),
        "turn_p95_ms": round(_pct(turn_ms, 95), 2),
        "context_p50_ms": round(_pct(context_ms, 50), 2),
        "context_p95_ms": round(_pct(context_ms, 95), 2),
        "context_mean_ms": round(statistics.fmean(context_ms), 2) if context_ms else None,
        "errors": len(errors),
        "error_samples": errors[:5],
    }


def _check_ledger(stores: Stores, asked: list[str]) -> list[str]:
    """Every message asked is in the ledger once, with one reply after it."""
    from rheo_cli.memory.ledger import turns as ledger

    conn = stores.reopen("rheo", scale.PROFILE)
    try:
        problems: list[str] = []
        stored = ledger.recent_turns(conn, scale.PROFILE, 2 * len(asked) + 10)
        users = [t.content for t in stored if t.role == "user"]
        for message in asked:
            count = users.count(message)
            if count != 1:
                problems.append(f"ledger holds {count} copies of {message[-20:]!r}")
        replies = sum(1 for t in stored if t.role == "assistant" and t.content == REPLY)
        if replies != len(asked):
            problems.append(f"{replies} replies stored for {len(asked)} turns")
        return problems
    finally:
        conn.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8, help="client processes (default 8)")
    parser.add_argument("--turns", type=int, default=50, help="turns per client (default 50)")
    parser.add_argument(
        "--history", type=int, default=10_000, help="turns of past in the store (default 10,000)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.clients < 1 or args.turns < 1 or args.history < 100:
        print(
            "concurrency: --clients and --turns must be at least 1, --history at least 100",
            file=sys.stderr,
        )
        return 2
    url = database_url(args.database_url)
    if args.backend == "postgres" and not url:
        print(
            "concurrency: --backend postgres needs --database-url or RHEO_BENCH_DATABASE_URL",
            file=sys.stderr,
        )
        return 2
    with tempfile.TemporaryDirectory(prefix="rheo-concurrency-") as tmp:
        stores = Stores(
            args.backend, folder=Path(tmp), url=url, leakproof_match=args.pg_leakproof_match
        )
        try:
            fig = run(stores, args.clients, args.turns, args.history)
        except StoreError as exc:
            print(f"concurrency: {exc}", file=sys.stderr)
            return 1
        finally:
            stores.close()
    if args.json:
        print(json.dumps(fig, indent=2))
    else:
        print(
            f"{fig['backend']}: {fig['clients']} clients x {fig['turns_per_client']} turns on a "
            f"store of {fig['history_turns']:,} turns"
        )
        print(f"  turns/s                 {fig['turns_per_s']:>10.2f}")
        print(f"  turn p50 / p95 (ms)     {fig['turn_p50_ms']:>10.2f} {fig['turn_p95_ms']:>10.2f}")
        print(
            f"  context p50 / p95 (ms)  {fig['context_p50_ms']:>10.2f} "
            f"{fig['context_p95_ms']:>10.2f}"
        )
        print(f"  errors                  {fig['errors']:>10}")
        for sample in fig["error_samples"]:
            print(f"    {sample}")
    return 0 if fig["errors"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
