"""The Redis hot cache of CURRENT MEMORY against a real Redis (``scripts/test-services
start``): one hash per tenant, backfilled on a miss, read from on a hit, dropped on every
memory write, with a TTL; a Redis that is down or holds garbage costs one notice, never the
chat. Skipped without RHEO_TEST_REDIS_URL."""

from __future__ import annotations

import json
import os
import socket
import uuid

import pytest

pytestmark = pytest.mark.skipif(
    not os.environ.get("RHEO_TEST_REDIS_URL"),
    reason="Redis tests need RHEO_TEST_REDIS_URL (scripts/test-services start)",
)


@pytest.fixture
def redis_client():
    import redis

    client = redis.Redis.from_url(os.environ["RHEO_TEST_REDIS_URL"])
    yield client
    client.close()


@pytest.fixture
def tenant(monkeypatch):
    name = "t" + uuid.uuid4().hex[:12]
    monkeypatch.setenv("RHEO_PROFILE", name)
    return name


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_miss_is_backfilled_then_reads_come_from_the_hash(
    rheo, redis_client, tenant, monkeypatch
):
    monkeypatch.setenv("RHEO_REDIS_URL", os.environ["RHEO_TEST_REDIS_URL"])
    assert rheo("memory", "add", "--topic", "pet", "The cat is called Miso").exit_code == 0
    key = f"rheo:{tenant}:_shared"
    assert not redis_client.exists(key)  # the write dropped (or never made) the entry

    first = rheo("context", "what is my cat called?")
    assert first.exit_code == 0, first.stderr
    assert "Miso" in first.stdout
    cached = redis_client.hgetall(key)
    assert cached[b"_complete"] == b"1"
    [field] = [f for f in cached if f.startswith(b"item:")]
    assert 0 < redis_client.ttl(key) <= 30 * 86400

    # A hit is read from Redis, not the store: change the cached fact and see it injected.
    item = json.loads(cached[field])
    item["label"] = "The cat is called Pixel"
    redis_client.hset(key, field, json.dumps(item))
    second = rheo("context", "what is my cat called?")
    assert "Pixel" in second.stdout and "Miso" not in second.stdout

    # Any memory write drops the tenant's entry; the next read backfills the truth.
    assert rheo("memory", "add", "--topic", "car", "The car is blue").exit_code == 0
    assert not redis_client.exists(key)
    third = rheo("context", "what is my cat called?")
    assert "Miso" in third.stdout and "Pixel" not in third.stdout


def test_tenants_have_their_own_keys(rheo, redis_client, tenant, monkeypatch):
    monkeypatch.setenv("RHEO_REDIS_URL", os.environ["RHEO_TEST_REDIS_URL"])
    other = tenant + "x"
    assert rheo("memory", "add", "--topic", "pet", "The cat is called Miso").exit_code == 0
    assert rheo("context", "cat?").exit_code == 0
    result = rheo("context", "cat?", "--profile", other)
    assert result.exit_code == 0 and "Miso" not in result.stdout
    cached = redis_client.hgetall(f"rheo:{other}:_shared")
    assert cached[b"_complete"] == b"1" and not any(f.startswith(b"item:") for f in cached)


def test_redis_down_the_chat_goes_on_with_one_notice(rheo, fake_model, tenant, monkeypatch):
    from helpers import request_text

    monkeypatch.setenv("RHEO_REDIS_URL", f"redis://127.0.0.1:{closed_port()}/0")
    assert rheo("memory", "add", "--topic", "pet", "The cat is called Miso").exit_code == 0
    fake_model.add("Miso.")
    result = rheo("ask", "what is my cat called?")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Miso.\n"
    assert result.stderr.count("Redis cache is not usable") == 1
    sent = request_text(fake_model.last)
    assert "The cat is called Miso" in sent  # memory came from the store


def test_garbage_in_the_cache_is_a_miss_with_one_notice(rheo, redis_client, tenant, monkeypatch):
    monkeypatch.setenv("RHEO_REDIS_URL", os.environ["RHEO_TEST_REDIS_URL"])
    assert rheo("memory", "add", "--topic", "pet", "The cat is called Miso").exit_code == 0
    key = f"rheo:{tenant}:_shared"
    redis_client.hset(key, mapping={"_complete": "1", "item:1": "{not json"})
    result = rheo("context", "what is my cat called?")
    assert result.exit_code == 0, result.stderr
    assert "Miso" in result.stdout
    assert result.stderr.count("Redis cache is not usable") == 1


def test_a_previewed_request_never_reaches_the_cache(rheo, redis_client, tenant, monkeypatch):
    """``rheo context "Remember that ..."`` shows the fact as ask would, inside a write that is
    rolled back: the cache must not be filled with it (nor dropped) meanwhile."""

    def memory(message: str) -> str:
        shown = rheo("context", message, "--json")
        assert shown.exit_code == 0, shown.stderr
        sections = json.loads(shown.stdout)["sections"]
        return "".join(s["text"] for s in sections if s["name"] == "CURRENT MEMORY")

    monkeypatch.setenv("RHEO_REDIS_URL", os.environ["RHEO_TEST_REDIS_URL"])
    assert rheo("memory", "add", "--topic", "pet", "The cat is called Miso").exit_code == 0
    assert "Miso" in memory("what is my cat called?")  # fills the cache
    key = f"rheo:{tenant}:_shared"
    cached = redis_client.hgetall(key)
    assert "Dr. Okafor" in memory("Remember that my dentist is Dr. Okafor.")
    assert redis_client.hgetall(key) == cached  # neither filled with it nor dropped
    assert "Dr. Okafor" not in memory("who is my dentist?")
