"""One tenant's search time while another tenant's data grows tenfold: isolation costs nothing.

    python bench/tenants.py [--backend sqlite|postgres] [--size 10000] [--factor 10]
                            [--runs 5] [--database-url URL] [--json]

A store is built with ``--size`` turns for the measured profile (the generator and bulk path
of ``bench/scale.py``: sessions over 5 years, 10,000 memory items, 1,000 digests). History
search (the 10 searches of ``scale.py``) and context assembly (its 20 messages) are timed for
that profile; then another profile is given ``--factor`` times as many turns, written with the
same vocabulary (the same words, so every word's postings grow), and as many memory items and
digests again; the same measures are taken for the first profile. On PostgreSQL the store is
settled (``VACUUM ANALYZE``) after each load, as autovacuum would. Reported: min / median /
p95 before and after (ms) and their ratio; the results of every search are checked to be the
same before and after (another tenant's rows never appear).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

import scale
from backends import Stores, add_arguments, database_url

from rheo_cli.memory.bulk import ItemIn, import_items, import_turns
from rheo_cli.memory.context import assemble as context
from rheo_cli.memory.facts import items
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store.errors import StoreError
from rheo_cli.memory.store.settings import Settings

BIG = "bigco"
"""The profile that grows."""


def measure(stores: Stores, runs: int, vocab: scale.Vocabulary) -> dict[str, Any]:
    """History search and context assembly for `scale.PROFILE`, in ms, with what each search
    found (turn ids, to compare before and after)."""
    rng = random.Random(11)
    conn = stores.reopen("rheo", scale.PROFILE)
    settings = Settings()
    last_ts = conn.execute(
        "SELECT max(ts) FROM turns WHERE profile = ?", (scale.PROFILE,)
    ).fetchone()[0]
    now = datetime.fromisoformat(last_ts.replace("Z", "+00:00")) + timedelta(minutes=5)
    texts = scale.messages(vocab, rng)
    queries = [rng.choice(vocab.words[1500:6000]) for _ in range(6)] + [
        rng.choice(vocab.names),
        "meeting",
        "project plan",
        '"the meeting"',
    ]
    search: list[float] = []
    assembly: list[float] = []
    found: dict[str, list[int]] = {}
    for _ in range(runs):
        for q in queries:
            started = time.perf_counter()
            hits = ledger.search_turns(conn, scale.PROFILE, q, limit=20)
            search.append((time.perf_counter() - started) * 1000)
            found[q] = [t.id for t, _ in hits]
        for text in texts:
            started = time.perf_counter()
            context.assemble(conn, profile=scale.PROFILE, message=text, now=now, settings=settings)
            assembly.append((time.perf_counter() - started) * 1000)
    conn.close()
    return {
        "search_ms": scale._stats(search),
        "context_ms": scale._stats(assembly),
        "found": found,
    }


def grow(stores: Stores, size: int, vocab: scale.Vocabulary) -> float:
    """Give profile `BIG` ``size`` turns of the same vocabulary, 10,000 memory items and
    1,000 digests; seconds taken."""
    rng = random.Random(99)
    main, extra = scale.generate_turns(size, rng, vocab)
    conn = stores.reopen("rheo", BIG)
    if hasattr(conn, "set_tenant"):
        conn.set_tenant(BIG)
    started = time.perf_counter()
    import_turns(conn, BIG, main + extra, gap_s=Settings().gap_s)
    facts = [
        ItemIn(
            category=rng.choice(items.CATEGORIES),
            topic=f"{rng.choice(vocab.words[200:1200])} {rng.choice(vocab.words[200:3000])}",
            label=scale.sentence(rng, vocab)[:200],
            when=scale.START + timedelta(days=rng.uniform(0, 5 * 365)),
            source_turn_id=None,
            confidence=0.8,
            reinforcements=1,
            pinned=False,
            status="active" if i % 200 == 0 else "superseded",
            events=(),
        )
        for i in range(10_000)
    ]
    import_items(conn, BIG, facts)
    sessions = [
        r[0] for r in conn.execute("SELECT id FROM sessions WHERE profile = ? LIMIT 1000", (BIG,))
    ]
    from rheo_cli.memory.ledger import digests

    for session_id in sessions:
        digests.store_digest(
            conn,
            profile=BIG,
            session_id=session_id,
            narrative=" ".join(scale.sentence(rng, vocab) for _ in range(3)),
            facts=[],
            procedures=[],
            decisions=[scale.sentence(rng, vocab)],
            source_turn_ids=[],
            model="bench",
            created_at="2026-11-01T00:00:00.000Z",
        )
    took = time.perf_counter() - started
    if stores.backend == "sqlite":
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    stores.settle("rheo")
    return took


def run(stores: Stores, size: int, factor: int, runs: int) -> dict[str, Any]:
    """Build, measure, grow the other tenant, measure again; the figures."""
    load_before = os.getloadavg()
    info = scale.build(stores, "rheo", size)
    before = measure(stores, runs, info["vocab"])
    grow_s = grow(stores, size * factor, info["vocab"])
    after = measure(stores, runs, info["vocab"])
    changed = sorted(q for q in before["found"] if before["found"][q] != after["found"][q])
    return {
        "backend": stores.backend,
        "server": stores.describe(),
        "turns": size,
        "other_turns": size * factor,
        "grow_s": round(grow_s, 1),
        "before": {k: v for k, v in before.items() if k != "found"},
        "after": {k: v for k, v in after.items() if k != "found"},
        "search_p95_ratio": round(after["search_ms"]["p95"] / before["search_ms"]["p95"], 2),
        "search_median_ratio": round(
            after["search_ms"]["median"] / before["search_ms"]["median"], 2
        ),
        "context_p95_ratio": round(after["context_ms"]["p95"] / before["context_ms"]["p95"], 2),
        "searches_changed": changed,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000, help="the measured profile's turns")
    parser.add_argument("--factor", type=int, default=10, help="the other profile's multiple")
    parser.add_argument("--runs", type=int, default=5, help="repetitions of each measure")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_arguments(parser)
    args = parser.parse_args(argv)
    if args.size < 100 or args.factor < 1 or args.runs < 1:
        print("tenants: --size at least 100, --factor and --runs at least 1", file=sys.stderr)
        return 2
    url = database_url(args.database_url)
    if args.backend == "postgres" and not url:
        print("tenants: --backend postgres needs --database-url", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="rheo-tenants-") as tmp:
        stores = Stores(args.backend, folder=Path(tmp), url=url)
        try:
            fig = run(stores, args.size, args.factor, args.runs)
        except StoreError as exc:
            print(f"tenants: {exc}", file=sys.stderr)
            return 1
        finally:
            stores.close()
    if args.json:
        print(json.dumps(fig, indent=2))
        return 0
    print(
        f"{fig['backend']}: profile of {fig['turns']:,} turns, then another of "
        f"{fig['other_turns']:,} ({fig['grow_s']} s to load)"
    )
    for key, label in (("search_ms", "history search"), ("context_ms", "context assembly")):
        b, a = fig["before"][key], fig["after"][key]
        print(
            f"  {label:<18} before {b['median']:8.1f} / {b['p95']:8.1f}   after "
            f"{a['median']:8.1f} / {a['p95']:8.1f}  ms (median / p95)"
        )
    print(f"  search p95 after / before: {fig['search_p95_ratio']}")
    print(f"  searches whose results changed: {fig['searches_changed'] or 'none'}")
    print(f"  load average before / after: {fig['load_before']} / {fig['load_after']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
