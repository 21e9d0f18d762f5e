"""The seam for a hot cache of CURRENT MEMORY (Solid# article: "Facts go to Redis (hot, <1ms
reads) and PostgreSQL (cold, durable). Automatic backfill on cache miss.").

The engine defines the contract and calls it; the cache itself lives outside the engine
(``rheo_cli/cache/redis_hot.py``) and is installed by the runtime. Reads of a tenant's active
items go through `active_items`: a hit is one round trip, a miss (or any trouble) reads the
store and backfills. Every memory write records an event (`events.append`), and that calls
`written`, which drops the tenant's cached entry. A cache must never break the chat: its
methods are expected not to raise, and anything they raise is ignored here anyway.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sqlite3
from collections.abc import Iterator
from typing import Any, Protocol

from .items import MemoryItem, list_items

SHARED = "_shared"
"""The cache key of what no particular assistant sees: the shared facts only (assistant names
cannot start with ``_``)."""


class HotCache(Protocol):
    """What a hot cache offers the engine. Items travel as plain dicts (JSON-ready)."""

    def read(self, tenant: str, assistant: str) -> list[dict[str, Any]] | None:
        """The cached active items, or None on a miss (or when the cache is unusable)."""

    def fill(self, tenant: str, assistant: str, items: list[dict[str, Any]]) -> None:
        """Store the tenant's active items (replacing what was cached), with the cache's TTL."""

    def invalidate(self, tenant: str) -> None:
        """Forget everything cached for ``tenant``."""


_installed: HotCache | None = None


def install(cache: HotCache | None) -> None:
    """Route active-item reads through ``cache`` (None: read the store directly)."""
    global _installed
    _installed = cache


def installed() -> HotCache | None:
    """The installed cache, if any."""
    return _installed


def active_items(
    conn: sqlite3.Connection, profile: str, *, assistant: str | None = None
) -> list[MemoryItem]:
    """The active memory items ``assistant`` sees in ``profile`` (None: the shared ones), from
    the hot cache when it holds them (key ``rheo:{tenant}:{assistant}``), else from the store
    (then written back to the cache). Same list either way."""
    cache = _installed
    if cache is None:
        return list_items(conn, profile, statuses=("active",), assistant=assistant)
    key = assistant or SHARED
    try:
        cached = cache.read(profile, key)
        if cached is not None:
            return [MemoryItem(**row) for row in cached]
    except Exception:  # noqa: BLE001 - a cache holding garbage is a miss
        pass
    found = list_items(conn, profile, statuses=("active",), assistant=assistant)
    with contextlib.suppress(Exception):  # a cache must never break the chat
        cache.fill(profile, key, [dataclasses.asdict(i) for i in found])
    return found


def written(profile: str) -> None:
    """A memory write for ``profile`` happened: drop its cached items."""
    cache = _installed
    if cache is None:
        return
    with contextlib.suppress(Exception):  # a cache must never break the chat
        cache.invalidate(profile)


@contextlib.contextmanager
def bypassed() -> Iterator[None]:
    """Meanwhile the installed cache is neither read, filled nor dropped: reads and writes
    go to the store alone. For writes that are rolled back (``rheo context`` stores the
    message tentatively): the cache must never hold what the store then forgets."""
    global _installed
    saved, _installed = _installed, None
    try:
        yield
    finally:
        _installed = saved
