"""The store: pragmas, private permissions, migrations from every earlier version."""

from __future__ import annotations

import json
import sqlite3
import stat
from datetime import UTC, datetime

import pytest

from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store import db
from rheo_cli.memory.store.errors import StoreError
from rheo_cli.memory.store.sqlite import migrations

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_pragmas_wal_busy_timeout_foreign_keys(tmp_path):
    conn = db.open_store(tmp_path / "r.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30000
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL


def test_folders_0700_files_0600(tmp_path):
    path = tmp_path / "a" / "b" / "rheo.db"
    conn = db.open_store(path)
    ledger.append_turn(conn, profile="default", role="user", content="x", now=NOW, gap_s=7200)
    for folder in (tmp_path / "a", tmp_path / "a" / "b"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for file in path.parent.iterdir():
        assert stat.S_IMODE(file.stat().st_mode) == 0o600, file.name


def _seed(conn: sqlite3.Connection, version: int) -> None:
    """Rows a database at ``version`` could hold, written with plain SQL of that schema."""
    conn.execute(
        "INSERT INTO sessions(profile, started_at, last_turn_at, turns) "
        "VALUES ('default', '2026-01-01T10:00:00.000Z', '2026-01-01T10:00:05.000Z', 2)"
    )
    conn.execute(
        "INSERT INTO turns(profile, session_id, role, content, ts) "
        "VALUES ('default', 1, 'user', 'the old question about tomatoes', "
        "'2026-01-01T10:00:00.000Z')"
    )
    conn.execute(
        "INSERT INTO turns(profile, session_id, role, content, ts, model, status) "
        "VALUES ('default', 1, 'assistant', 'the old answer', '2026-01-01T10:00:05.000Z', "
        "'m', 'ok')"
    )


@pytest.mark.parametrize("start", range(1, migrations.SCHEMA_VERSION))
def test_upgrade_from_every_earlier_version(tmp_path, start):
    path = tmp_path / "old.db"
    raw = sqlite3.connect(path, isolation_level=None)
    assert migrations.migrate(raw, target=start) == [
        m.__name__ for m in migrations.MIGRATIONS[:start]
    ]
    _seed(raw, start)
    raw.close()

    conn = db.open_store(path)
    assert migrations.schema_version(conn) == migrations.SCHEMA_VERSION
    recorded = [r[0] for r in conn.execute("SELECT name FROM schema_migrations ORDER BY version")]
    assert recorded == [m.__name__ for m in migrations.MIGRATIONS]
    # Old rows survive and stay searchable; new writes work on the upgraded schema.
    assert [t.content for t, _ in ledger.search_turns(conn, "default", "tomatoes")] == [
        "the old question about tomatoes"
    ]
    added = ledger.append_turn(
        conn, profile="default", role="user", content="new tomatoes", now=NOW, gap_s=7200
    )
    assert added.turn.id == 3
    assert {t.id for t, _ in ledger.search_turns(conn, "default", "tomato")} == {1, 3}


def test_fresh_database_reaches_latest_version(tmp_path):
    conn = db.open_store(tmp_path / "new.db")
    assert migrations.schema_version(conn) == migrations.SCHEMA_VERSION
    # Opening again applies nothing.
    assert migrations.migrate(conn) == []


def test_database_from_newer_rheo_is_refused(tmp_path):
    path = tmp_path / "future.db"
    db.open_store(path).execute(f"PRAGMA user_version = {migrations.SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer than this rheo"):
        db.open_store(path)


def test_not_a_database_is_a_store_error(tmp_path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="not a usable rheo database|cannot open"):
        db.open_store(path)


def test_rheo_paths_json(rheo, home):
    result = rheo("paths", "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {
        "db": str(home / "rheo.db"),
        "config": str(home / "config.toml"),
        "history": str(home / "history" / "default"),
    }


def test_paths_follow_profile(rheo, home):
    out = json.loads(rheo("--profile", "work", "paths", "--json").stdout)
    assert out["history"] == str(home / "history" / "work")
    assert out["db"] == str(home / "rheo.db")


def test_paths_without_rheo_home_use_platform_data_dir(rheo, monkeypatch, tmp_path):
    monkeypatch.delenv("RHEO_HOME")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    out = json.loads(rheo("paths", "--json").stdout)
    assert out["db"] == str(tmp_path / "xdg" / "rheo" / "rheo.db")
    assert out["config"] == str(tmp_path / "xdg" / "rheo" / "config.toml")


def test_writer_waits_for_a_held_lock_instead_of_failing(conn):
    import threading
    import time

    holder = conn.store.open_again()  # another process's connection, on either store
    held = holder.write()
    held.__enter__()
    other = conn
    done: list[float] = []

    def append() -> None:
        start = time.monotonic()
        ledger.append_turn(other, profile="default", role="user", content="x", now=NOW, gap_s=7200)
        done.append(time.monotonic() - start)

    thread = threading.Thread(target=append)
    thread.start()
    time.sleep(0.5)
    assert not done  # still waiting on the lock
    held.__exit__(None, None, None)
    holder.close()
    thread.join(10)
    assert done and done[0] >= 0.4
    assert ledger.count_turns(other, "default") == 1
