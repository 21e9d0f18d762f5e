"""The seam for a hot cache of CURRENT MEMORY (Solid# article: "Facts go to Redis (hot, <1ms
reads) and PostgreSQL (cold, durable). Automatic backfill on cache miss.").

The engine defines the contract and calls it; the cache itself lives outside the engine
(``rheo_cli/cache/redis_hot.py``) and is installed by the runtime. Reads of a tenant's active
items go through `active_items`: a hit is one round trip to the cache plus one indexed lookup
of the tenant's memory `generation` in the store; a miss (or any trouble) reads the store and
backfills.

Coherence never depends on the cache being told about a write: every insert, update or delete
of a memory item bumps the tenant's generation in the same transaction (a trigger, migration
12 / PostgreSQL m005), every cached entry records the generation it was read at, and an entry
whose generation is not the store's current one is a miss (and the tenant's entries are
dropped). So a purged or changed fact is never served, even when the write happened while the
cache was unreachable, or by a process that has no cache configured (``rheo import``).
Writers also drop the tenant's entries (`written`) to free the memory early. A cache must
never break the chat: its methods are expected not to raise, and anything they raise is
ignored here anyway.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from typing import Any, Protocol

from ..store.api import Connection
from .items import MemoryItem, list_items

SHARED = "_shared"
"""The cache key of what no particular assistant sees: the shared facts only (assistant names
cannot start with ``_``)."""


class HotCache(Protocol):
    """What a hot cache offers the engine. Items travel as plain dicts (JSON-ready); a
    ``generation`` is an opaque string from `generation`."""

    def read(self, tenant: str, assistant: str) -> tuple[str, list[dict[str, Any]]] | None:
        """``(generation, active items)`` as cached, or None on a miss (or when the cache is
        unusable or holds something malformed)."""

    def fill(
        self, tenant: str, assistant: str, items: list[dict[str, Any]], generation: str
    ) -> None:
        """Store the tenant's active items read at ``generation`` (replacing what was cached),
        with the cache's TTL."""

    def invalidate(self, tenant: str) -> None:
        """Forget everything cached for ``tenant``."""


_installed: HotCache | None = None

_FIELDS = frozenset(f.name for f in dataclasses.fields(MemoryItem))


def install(cache: HotCache | None) -> None:
    """Route active-item reads through ``cache`` (None: read the store directly)."""
    global _installed
    _installed = cache


def installed() -> HotCache | None:
    """The installed cache, if any."""
    return _installed


def generation(conn: Connection, profile: str) -> str:
    """The tenant's memory generation: ``"<epoch>:<counter>"``, where the counter goes up with
    every change to one of its memory items and the epoch is random per store and tenant
    (``"none"`` for a tenant whose memory never changed). One primary-key lookup."""
    row = conn.execute(
        "SELECT epoch, memory_generation FROM profile_counters WHERE profile = ?", (profile,)
    ).fetchone()
    return f"{row[0]}:{row[1]}" if row else "none"


_KINDS: dict[str, tuple[type, ...]] = {
    "id": (int,),
    "reinforcements": (int,),
    "confidence": (int, float),
    "pinned": (bool, int),
    "properties": (dict,),
    "source_turn_id": (int, type(None)),
    "superseded_by": (int, type(None)),
    "conflict_with": (int, type(None)),
    "assistant": (str, type(None)),
    "due_at": (str, type(None)),
    "valid_from": (str, type(None)),
    "valid_until": (str, type(None)),
}
"""The type of each field of a cached item that is not plain text."""

_TIMES = ("created_at", "reinforced_at", "due_at", "valid_from", "valid_until")


def as_items(rows: object, tenant: str) -> list[MemoryItem]:
    """Cached rows back as ``tenant``'s items, in id order. Raises ValueError (with a short
    reason) for anything that is not a list of items as `active_items` writes them: a field
    missing or unknown, a wrong type, a time that is not stored UTC text, another tenant."""
    from ..store.timeutil import from_stored

    if not isinstance(rows, list):
        raise ValueError("not a list of items")
    out: list[MemoryItem] = []
    for row in rows:
        if not isinstance(row, dict) or set(row) != _FIELDS:
            raise ValueError("an entry without the fields of a memory item")
        for name, value in row.items():
            kinds = _KINDS.get(name, (str,))
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                raise ValueError(f"an entry whose {name} is not a {kinds[0].__name__}")
        if row["profile"] != tenant:
            raise ValueError("an entry of another tenant")
        for name in _TIMES:
            if row[name] is not None:
                try:
                    from_stored(row[name])
                except Exception:  # noqa: BLE001 - InvalidInput, ValueError, OverflowError
                    raise ValueError(f"an entry whose {name} is not a time") from None
        out.append(MemoryItem(**row))
    out.sort(key=lambda i: i.id)
    return out


def active_items(
    conn: Connection, profile: str, *, assistant: str | None = None
) -> list[MemoryItem]:
    """The active memory items ``assistant`` sees in ``profile`` (None: the shared ones), from
    the hot cache when it holds them at the store's current `generation` (key
    ``rheo:{tenant}:{assistant}``), else from the store (then written back to the cache).
    Same list either way."""
    cache = _installed
    if cache is None:
        return list_items(conn, profile, statuses=("active",), assistant=assistant)
    key = assistant or SHARED
    current = generation(conn, profile)  # read before the items: a fill is never newer-tagged
    try:
        cached = cache.read(profile, key)
        if cached is not None:
            if cached[0] == current:
                return as_items(cached[1], profile)
            cache.invalidate(profile)  # written while the cache was not told: drop it all
    except Exception:  # noqa: BLE001 - a cache holding garbage is a miss
        pass
    found = list_items(conn, profile, statuses=("active",), assistant=assistant)
    with contextlib.suppress(Exception):  # a cache must never break the chat
        cache.fill(profile, key, [dataclasses.asdict(i) for i in found], current)
    return found


def written(profile: str) -> None:
    """A memory write for ``profile`` happened: drop its cached items (to free them early;
    the generation check is what keeps reads right when this does not reach the cache)."""
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
