"""The CURRENT MEMORY read path with and without the Redis hot cache.

    eval "$(scripts/test-services start)"
    .venv/bin/python bench/hotcache.py --items 50 --reads 2000

Fills one tenant with ``--items`` active memory items on each store (SQLite file,
PostgreSQL at RHEO_TEST_DATABASE_URL when set), then times ``hotcache.active_items`` (what
context assembly calls) ``--reads`` times: straight from the store, and through Redis
(RHEO_TEST_REDIS_URL) after the first read backfilled it. Prints median and p95 in ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from rheo_cli.cache import redis_hot
from rheo_cli.memory.facts import hotcache, remember
from rheo_cli.memory.facts.parsing import Fact
from rheo_cli.memory.store import db
from rheo_cli.memory.store.settings import Settings


def fill(conn, n: int) -> None:
    settings = Settings(cap=max(n, 50))
    now = datetime(2026, 5, 1, tzinfo=UTC)
    for i in range(n):
        fact = Fact("fact", f"topic {i}", f"Fact number {i} about project {i * 7}")
        remember.remember(conn, fact, source="manual", now=now, settings=settings, profile="bench")


def timed(conn, reads: int) -> tuple[float, float]:
    samples = []
    for _ in range(reads):
        start = time.perf_counter()
        hotcache.active_items(conn, "bench")
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=50)
    ap.add_argument("--reads", type=int, default=2000)
    args = ap.parse_args()
    stores = []
    folder = Path(tempfile.mkdtemp())
    stores.append(("SQLite", db.open_store(folder / "bench.db")))
    url = os.environ.get("RHEO_TEST_DATABASE_URL")
    if url:
        conn = db.open_url(url, tenant="bench")
        conn.execute("SELECT 1")
        stores.append(("PostgreSQL", conn))
    redis_url = os.environ.get("RHEO_TEST_REDIS_URL")
    print(f"{args.items} active items, {args.reads} reads; ms per read\n")
    print("| store | cache | median ms | p95 ms |")
    print("|---|---|---:|---:|")
    for name, conn in stores:
        if not list(hotcache.active_items(conn, "bench")):
            fill(conn, args.items)
        hotcache.install(None)
        med, p95 = timed(conn, args.reads)
        print(f"| {name} | none | {med:.3f} | {p95:.3f} |")
        if redis_url:
            cache = redis_hot.install(redis_url, ttl_s=3600)
            assert cache is not None
            cache.invalidate("bench")
            hotcache.active_items(conn, "bench")  # the miss: backfill
            med, p95 = timed(conn, args.reads)
            print(f"| {name} | Redis | {med:.3f} | {p95:.3f} |")
            redis_hot.uninstall()
        conn.close()


if __name__ == "__main__":
    main()
