"""The Redis hot cache never serves memory the store no longer holds, even when the write
never reached Redis: each entry carries the store's memory generation and is used only while
it matches. Also: a URL Redis cannot use, and entries that are not what rheo writes, cost one
notice naming the cache, never a traceback. Needs ``redis-server`` (installed by
``scripts/test-services``): each test runs its own, so pausing it disturbs nobody."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import BACKENDS, pg_schema_url

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None, reason="needs redis-server (scripts/test-services)"
)

FACT = "The cat is called Miso"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A private redis-server on loopback: (its process, its URL)."""
    import redis

    port = free_port()
    proc = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            client.ping()
            break
        except redis.RedisError:
            time.sleep(0.05)
    client.close()
    try:
        yield proc, url
    finally:
        os.kill(proc.pid, signal.SIGCONT)
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def client(redis_server: tuple[subprocess.Popen[bytes], str]) -> Iterator[Any]:
    import redis

    c = redis.Redis.from_url(redis_server[1])
    yield c
    c.close()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """rheo on a SQLite file in RHEO_HOME, or on a fresh schema of the test PostgreSQL."""
    if request.param == "sqlite":
        yield "sqlite"
        return
    if not os.environ.get("RHEO_TEST_DATABASE_URL"):
        pytest.skip("PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)")
    with pg_schema_url() as url:
        monkeypatch.setenv("RHEO_DATABASE_URL", url)
        yield "postgres"


@pytest.fixture
def tenant(monkeypatch: pytest.MonkeyPatch) -> str:
    name = "t" + uuid.uuid4().hex[:12]
    monkeypatch.setenv("RHEO_PROFILE", name)
    return name


@pytest.mark.parametrize("change", ["purge", "forget"])
def test_a_write_while_redis_is_paused_is_never_served_stale(
    rheo, store, redis_server, client, tenant, monkeypatch, change
):
    proc, url = redis_server
    monkeypatch.setenv("RHEO_REDIS_URL", url)
    assert rheo("memory", "add", "--topic", "pet", FACT).exit_code == 0
    first = rheo("context", "what is my cat called?")
    assert first.exit_code == 0 and "Miso" in first.stdout
    key = f"rheo:{tenant}:_shared"
    assert client.exists(key)  # cached

    os.kill(proc.pid, signal.SIGSTOP)  # accepts connections, never answers
    try:
        args = ("purge", "memory", "1", "--yes") if change == "purge" else ("memory", "forget", "1")
        done = rheo(*args)
    finally:
        os.kill(proc.pid, signal.SIGCONT)
    assert done.exit_code == 0, done.stderr
    assert done.stderr.count("Redis cache is not usable") == 1
    assert client.exists(key)  # the invalidation never reached Redis: the old entry is there

    after = rheo("context", "what is my cat called?")
    assert after.exit_code == 0, after.stderr
    assert "Miso" not in after.stdout
    assert after.stderr == ""
    cached = client.hgetall(key)  # replaced by the store's truth
    assert not any(b"Miso" in v for v in cached.values())


def test_import_is_seen_through_the_cache(rheo, store, redis_server, client, tenant, monkeypatch,
                                          tmp_path):  # fmt: skip
    url = redis_server[1]
    assert rheo("memory", "add", "--topic", "pet", FACT).exit_code == 0
    exported = tmp_path / "memory.jsonl"
    assert rheo("export", "-o", str(exported)).exit_code == 0
    assert rheo("purge", "profile", tenant, "--yes").exit_code == 0

    monkeypatch.setenv("RHEO_REDIS_URL", url)
    empty = rheo("context", "what is my cat called?")
    assert empty.exit_code == 0 and "Miso" not in empty.stdout
    assert client.hgetall(f"rheo:{tenant}:_shared").get(b"_complete") == b"1"  # cached, empty
    monkeypatch.delenv("RHEO_REDIS_URL")  # imported by a process that does not use the cache
    # deliberately brought back: the purge's tombstone leaves it out otherwise
    imported = rheo("import", str(exported), "--include-purged")
    assert imported.exit_code == 0, imported.stderr
    monkeypatch.setenv("RHEO_REDIS_URL", url)
    restored = rheo("context", "what is my cat called?")
    assert restored.exit_code == 0 and "Miso" in restored.stdout


@pytest.mark.parametrize(
    "url", ["notaurl", "http://127.0.0.1:1/", "redis://[bad", "redis://h:99999/0"]
)
def test_a_url_redis_cannot_use_is_one_notice_then_the_store(rheo, url, monkeypatch):
    monkeypatch.setenv("RHEO_REDIS_URL", url)
    added = rheo("memory", "add", "--topic", "pet", FACT)
    assert added.exit_code == 0, added.stderr
    result = rheo("context", "what is my cat called?")
    assert result.exit_code == 0 and "Miso" in result.stdout
    for out in (added, result):
        assert (
            "Traceback" not in out.stderr
            and out.exception is None
            or isinstance(out.exception, SystemExit)
        )
        assert out.stderr.count("\n") == 1 and "Redis" in out.stderr, out.stderr


GOOD = {
    "id": 1, "profile": "", "category": "fact", "topic": "pet", "label": "The cat is Pixel",
    "properties": {}, "confidence": 0.9, "reinforcements": 0, "pinned": False, "reason": "",
    "source": "manual", "source_turn_id": None, "created_at": "2026-01-01T00:00:00.000Z",
    "reinforced_at": "2026-01-01T00:00:00.000Z", "status": "active", "superseded_by": None,
    "conflict_with": None, "due_at": None, "assistant": None,
}  # fmt: skip


@pytest.mark.parametrize(
    "garbage",
    [
        {"id": "abc"},
        {k: v for k, v in GOOD.items() if k != "label"},
        {**GOOD, "created_at": "yesterday-ish"},
        {**GOOD, "due_at": "9999-99-99"},
        {**GOOD, "confidence": "high"},
        [1, 2],
    ],
    ids=["id-abc", "missing-field", "bad-time", "bad-due", "bad-type", "not-an-object"],
)
def test_garbage_entries_are_a_miss_with_one_notice_naming_the_cache(
    rheo, redis_server, client, tenant, monkeypatch, garbage
):
    monkeypatch.setenv("RHEO_REDIS_URL", redis_server[1])
    assert rheo("memory", "add", "--topic", "pet", FACT).exit_code == 0
    assert rheo("context", "cat?").exit_code == 0
    key = f"rheo:{tenant}:_shared"
    [field] = [f for f in client.hgetall(key) if f.startswith(b"item:")]
    if isinstance(garbage, dict) and "profile" in garbage:
        garbage = {**garbage, "profile": tenant}
    client.hset(key, field, json.dumps(garbage))  # same generation: only the item is wrong
    result = rheo("context", "what is my cat called?")
    assert result.exit_code == 0, result.stderr
    assert "Miso" in result.stdout and "Pixel" not in result.stdout
    assert result.stderr.count("\n") == 1
    assert "Redis cache" in result.stderr and key in result.stderr
    assert "doctor" not in result.stderr
    # The backfill replaced it: the next read is a clean hit.
    again = rheo("context", "what is my cat called?")
    assert again.stderr == "" and "Miso" in again.stdout


def redis_holds(client: Any, word: bytes) -> list[bytes]:
    """The keys of Redis whose name or any field or value holds ``word``."""
    found = []
    for key in client.scan_iter(count=1000):
        kind = client.type(key)
        blobs = [key]
        if kind == b"hash":
            for field, value in client.hgetall(key).items():
                blobs += [field, value]
        elif kind == b"string":
            blobs.append(client.get(key) or b"")
        if any(word in blob for blob in blobs):
            found.append(key)
    return found


@pytest.mark.parametrize("what", ["memory", "turn"])
def test_after_a_purge_redis_holds_nothing_of_the_purged_text(
    rheo, fake_model, store, redis_server, client, tenant, monkeypatch, what
):
    monkeypatch.setenv("RHEO_REDIS_URL", redis_server[1])
    mark = "ZORBLAX77"
    if what == "turn":  # learnt in the turn itself ("remember that ..."), from turn 1
        fake_model.add("Noted.")
        assert rheo("ask", f"remember that the courier is {mark}").exit_code == 0
    else:
        assert rheo("memory", "add", "--topic", "courier", f"The courier is {mark}").exit_code == 0
    assert rheo("memory", "add", "--topic", "pet", FACT).exit_code == 0
    assert mark in rheo("context", "who is the courier?").stdout
    assert redis_holds(client, mark.encode())  # cached
    assert rheo("purge", what, "1", "--yes").exit_code == 0
    assert redis_holds(client, mark.encode()) == []
    again = rheo("context", "who is the courier?")
    assert again.exit_code == 0 and mark not in again.stdout and "Miso" in again.stdout
    assert redis_holds(client, b"Miso") and redis_holds(client, mark.encode()) == []


def test_a_secret_the_person_asked_to_forget_leaves_redis(
    rheo, fake_model, store, redis_server, client, tenant, monkeypatch
):
    monkeypatch.setenv("RHEO_REDIS_URL", redis_server[1])
    fake_model.default = "Done."
    label = "Ana's passport number is X1234567"
    assert rheo("memory", "add", "--topic", "passport", label).exit_code == 0
    assert rheo("memory", "add", "--topic", "pet", FACT).exit_code == 0
    assert "X1234567" in rheo("context", "what is my passport number?").stdout
    assert redis_holds(client, b"X1234567")  # cached
    forgot = rheo("ask", "please forget my passport number")
    assert forgot.exit_code == 0 and "forgot #" in forgot.stderr
    again = rheo("context", "what is my passport number?")
    assert again.exit_code == 0 and "X1234567" not in again.stdout and "Miso" in again.stdout
    assert redis_holds(client, b"Miso") and redis_holds(client, b"X1234567") == []
