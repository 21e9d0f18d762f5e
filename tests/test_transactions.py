"""`db.write`: nested blocks are savepoints, the original error always surfaces, and a held
lock is waited for, not reported."""

from __future__ import annotations

import sqlite3
import threading
import time

import pytest

from rheo_cli.memory.store import db


@pytest.fixture
def store(tmp_path):
    conn = db.open_store(tmp_path / "t.db", migrate_schema=False)
    conn.execute("CREATE TABLE t (x INTEGER)")
    yield conn
    conn.close()


def values(conn: sqlite3.Connection) -> list[int]:
    return [r[0] for r in conn.execute("SELECT x FROM t ORDER BY x")]


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


def test_a_lock_held_past_the_busy_timeout_is_waited_for(tmp_path, monkeypatch):
    path = tmp_path / "t.db"
    first = db.open_store(path, migrate_schema=False)
    first.execute("CREATE TABLE t (x INTEGER)")
    second = db.open_store(path, migrate_schema=False)
    second.execute("PRAGMA busy_timeout = 50")  # each try gives up after 50 ms
    first.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.3, lambda: first.execute("COMMIT"))
    release.start()
    started = time.monotonic()
    with db.write(second, attempts=100):
        second.execute("INSERT INTO t VALUES (7)")
    release.join()
    assert time.monotonic() - started >= 0.25
    assert values(second) == [7]


def test_a_lock_that_never_clears_is_reported_after_the_attempts(tmp_path):
    path = tmp_path / "t.db"
    first = db.open_store(path, migrate_schema=False)
    first.execute("CREATE TABLE t (x INTEGER)")
    second = db.open_store(path, migrate_schema=False)
    second.execute("PRAGMA busy_timeout = 10")
    first.execute("BEGIN IMMEDIATE")
    with pytest.raises(sqlite3.OperationalError, match="locked"), db.write(second, attempts=3):
        pass
    first.execute("ROLLBACK")
