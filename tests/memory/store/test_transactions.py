"""`db.write` on both stores: nested blocks are savepoints, the original error always
surfaces, and a held lock is waited for, then reported as the one rheo error both stores
raise for it (`Busy`), after the same bounded wait."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from rheo_cli.memory.store import db
from rheo_cli.memory.store.errors import Busy


@pytest.fixture
def store(conn):
    conn.execute("CREATE TABLE t (x INTEGER)")
    return conn


def values(conn: Any) -> list[int]:
    return [r[0] for r in conn.execute("SELECT x FROM t ORDER BY x")]


def hold(conn: Any) -> Any:
    """Another connection to ``conn``'s store, holding its write lock (``.release()``)."""
    other = conn.store.open_again()
    held = other.write()
    held.__enter__()

    def release() -> None:
        held.__exit__(None, None, None)
        other.close()

    other.release = release
    return other


def test_a_failed_nested_block_undoes_only_its_own_writes(store):
    with db.write(store):
        store.execute("INSERT INTO t VALUES (1)")
        with pytest.raises(ValueError), db.write(store):
            store.execute("INSERT INTO t VALUES (2)")
            raise ValueError("inner")
        store.execute("INSERT INTO t VALUES (3)")
    assert values(store) == [1, 3]
    assert not store.in_transaction


def test_an_error_in_the_outer_block_rolls_everything_back(store):
    with pytest.raises(KeyError), db.write(store):
        store.execute("INSERT INTO t VALUES (1)")
        with db.write(store):
            store.execute("INSERT INTO t VALUES (2)")
        raise KeyError("outer")
    assert values(store) == []
    assert not store.in_transaction


def test_the_original_error_is_raised_even_when_the_rollback_fails(store):
    class Boom(Exception):
        pass

    with pytest.raises(Boom), db.write(store):
        store.execute("INSERT INTO t VALUES (1)")
        store.execute("ROLLBACK")  # the transaction is gone: the block's ROLLBACK would fail
        raise Boom()
    assert values(store) == []


def test_a_lock_held_past_the_busy_timeout_is_waited_for(store):
    second = store
    second.store.set_wait(0.05)  # each try gives up after 50 ms
    first = hold(second)
    release = threading.Timer(0.3, first.release)
    release.start()
    started = time.monotonic()
    with db.write(second, attempts=100):
        second.execute("INSERT INTO t VALUES (7)")
    release.join()
    assert time.monotonic() - started >= 0.25
    assert values(second) == [7]


def test_a_lock_that_never_clears_is_reported_after_the_attempts(store, backend):
    second = store
    second.store.set_wait(0.01)
    first = hold(second)
    try:
        said = "locked" if backend == "sqlite" else "lock timeout"  # each database's words
        with pytest.raises(Busy, match=said), db.write(second, attempts=3):
            pass
    finally:
        first.release()
    assert not second.in_transaction


def test_a_short_wait_for_one_write_gives_up_on_time_on_both_stores(store):
    """The bounded wait a caller asks for (closing sessions queues opportunistically, 0.25 s)
    is kept on both stores, and the store's own wait is back afterwards."""
    first = hold(store)
    started = time.monotonic()
    try:
        with pytest.raises(Busy), db.write(store, attempts=1, wait_s=0.2):
            pass
    finally:
        first.release()
    assert 0.15 <= time.monotonic() - started < 10
    with db.write(store):  # the lock is free: the next write goes through
        store.execute("INSERT INTO t VALUES (1)")
    assert values(store) == [1]
