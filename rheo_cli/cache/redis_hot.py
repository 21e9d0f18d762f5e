"""The Redis hot cache of CURRENT MEMORY (Solid# article: "a Redis hash read + keyword
matching"; the ``redis`` extra).

One hash per tenant and assistant, key ``rheo:{tenant}:{assistant}``: a field per active item
(``item:<id>`` -> the item as JSON), ``_generation`` (the store's memory generation the items
were read at, `hotcache.generation`) and ``_complete`` (so a tenant with no memory is cached
too). A read is one round trip (HGETALL) and is used only when its generation is the store's
current one, so a write the cache never heard of (Redis paused or unreachable during a purge,
``rheo import`` without Redis configured) is never served stale. A miss is backfilled from the
store in one MULTI (DEL, HSET, EXPIRE) with the configured TTL, and the key is added to the
tenant's index set ``rheo:{tenant}:_keys``; every memory write also deletes the keys that
index names (each assistant sees a different view of the tenant's memory). No wildcard
queries: keys are only ever named in full. The tenant is the runtime's profile, from
configuration.

If Redis is down, slow (timeouts of half a second) or its URL cannot be used, the chat goes on
with memory read from the store, one notice goes to stderr, and the cache is left alone for
the rest of the process. An entry that is not what rheo writes (a malformed item, a bad time)
is a miss, with one notice naming the key, and is replaced by the backfill.
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any, TextIO

from ..memory.facts import hotcache

TIMEOUT_S = 0.5
"""Connect and read timeout (seconds) of every Redis call."""


def key(tenant: str, assistant: str) -> str:
    """The hash holding ``tenant``'s memory for ``assistant`` (`hotcache.SHARED`: no assistant)."""
    return f"rheo:{tenant}:{assistant}"


def index_key(tenant: str) -> str:
    """The set naming every cached hash of ``tenant`` (assistant names never start with
    ``_``, so it cannot clash with one)."""
    return f"rheo:{tenant}:_keys"


class RedisHotCache:
    """`hotcache.HotCache` over a Redis server. Never raises: trouble is one notice."""

    def __init__(self, url: str, *, ttl_s: float, err: TextIO | None = None) -> None:
        import redis

        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError, ValueError)
        self.ttl_s = ttl_s
        self._err = err
        self.failed = False
        self._warned = False
        try:
            self._redis = redis.Redis.from_url(
                url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S
            )
        except (ValueError, TypeError) as exc:  # not a redis://, rediss:// or unix:// URL
            self._notice(f"RHEO_REDIS_URL is not a Redis URL: {_one_line(exc)}")

    def _notice(self, why: str, *, stop: bool = True) -> None:
        """One notice per process; ``stop``: leave the cache alone from now on."""
        if not self._warned:
            out = self._err or sys.stderr
            print(
                f"rheo: the Redis cache is not usable ({why}); memory is read from the store",
                file=out,
            )
        self._warned = True
        self.failed = self.failed or stop

    def read(self, tenant: str, assistant: str) -> tuple[str, list[dict[str, Any]]] | None:
        """``(generation, items)`` as cached, or None on a miss, when Redis fails, or for an
        entry that is not what rheo writes (one notice naming its key)."""
        if self.failed:
            return None
        try:
            found: dict[Any, Any] = self._redis.hgetall(key(tenant, assistant))
        except self._errors as exc:
            self._notice(_one_line(exc))
            return None
        if not found:
            return None
        try:
            if found.get(b"_complete") != b"1":
                raise ValueError("no completion mark")
            generation = found.get(b"_generation")
            if not isinstance(generation, bytes):
                raise ValueError("no generation")
            rows = [
                json.loads(value) for field, value in found.items() if field.startswith(b"item:")
            ]
            hotcache.as_items(rows, tenant)  # every field of every item, or ValueError
        except (ValueError, AttributeError, TypeError, RecursionError) as exc:
            self._notice(
                f"unexpected content under {key(tenant, assistant)}: {_one_line(exc)}",
                stop=False,  # a miss: the backfill replaces it
            )
            return None
        rows.sort(key=lambda i: int(i["id"]))
        return generation.decode("utf-8", "replace"), rows

    def fill(
        self, tenant: str, assistant: str, items: list[dict[str, Any]], generation: str
    ) -> None:
        """Replace the cached items of ``tenant``/``assistant``, read at the store's memory
        ``generation`` (one MULTI, with the TTL)."""
        if self.failed:
            return
        name = key(tenant, assistant)
        mapping: dict[str | bytes, str | bytes] = {"_complete": "1", "_generation": generation}
        for item in items:
            mapping[f"item:{item['id']}"] = json.dumps(item, ensure_ascii=False)
        try:
            pipe = self._redis.pipeline(transaction=True)
            pipe.delete(name)
            pipe.hset(name, mapping=mapping)  # type: ignore[arg-type]
            pipe.expire(name, max(1, int(self.ttl_s)))
            pipe.sadd(index_key(tenant), name)
            pipe.expire(index_key(tenant), max(1, int(self.ttl_s)))
            pipe.execute()
        except self._errors as exc:
            self._notice(_one_line(exc))

    def invalidate(self, tenant: str) -> None:
        """Delete ``tenant``'s cached memory: every key its index names, and the index."""
        if self.failed:
            return
        try:
            names = [n for n in self._redis.smembers(index_key(tenant)) if isinstance(n, bytes)]
            self._redis.delete(*names, key(tenant, hotcache.SHARED), index_key(tenant))
        except self._errors as exc:
            self._notice(_one_line(exc))

    def close(self) -> None:
        """Close the connection pool."""
        with contextlib.suppress(*self._errors, AttributeError):
            self._redis.close()


def install(url: str, *, ttl_s: float) -> RedisHotCache | None:
    """Make ``url``'s Redis the engine's hot cache; None (and one notice) when the ``redis``
    package is missing (`extras.install_hint`)."""
    try:
        cache = RedisHotCache(url, ttl_s=ttl_s)
    except ImportError:
        from ..extras import install_hint

        print(
            f"rheo: RHEO_REDIS_URL needs the redis package: {install_hint('redis')}; "
            "memory is read from the store",
            file=sys.stderr,
        )
        return None
    hotcache.install(cache)
    return cache


def uninstall() -> None:
    """Stop using the hot cache (the runtime closes it)."""
    cache = hotcache.installed()
    hotcache.install(None)
    if isinstance(cache, RedisHotCache):
        cache.close()


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
