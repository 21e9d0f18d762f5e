"""A search index garbled beyond FTS5's own repair — its structure record overwritten with
random bytes (``UPDATE turns_fts_data SET block = randomblob(length(block)) WHERE id > 1``), its
configuration changed, a shadow table dropped — cannot even be opened: FTS5's 'delete-all',
'rebuild' and DROP TABLE all fail with "vtable constructor failed". Before, every insert into
its table failed with it: `rheo ask` answered but stored nothing ("this exchange was not
stored"), `memory add`, `kb add`, `purge` and `import` stopped with a database error, and
`rheo doctor --repair` said "could not rebuild the search indexes" and left it broken. Now the
index's shadow tables are made again and it is rebuilt from its table: the turn is stored and
found, and `--repair` mends each index (twice over, still exit 0)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fakeprovider import facts
from helpers import db_rows, route

from rheo_cli.memory.store.errors import DatabaseError
from rheo_cli.memory.store.sqlite import health

GARBLE = {
    name: f"UPDATE {name}_data SET block = randomblob(length(block)) WHERE id > 1"
    for name in health.FTS_INDEXES
}
"""The damage once seen (a garbled page), done to each of the five FTS5 indexes."""

OTHER_DAMAGE = {
    "configuration changed": "UPDATE turns_fts_config SET v = 99 WHERE k = 'version'",
    "data shadow table dropped": "DROP TABLE turns_fts_data",
    "index shadow table dropped": "DROP TABLE memory_items_fts_idx",
    "every index garbled": "; ".join(GARBLE.values()),
}


def _seed(rheo: Any, fake_model: Any, monkeypatch: Any, tmp_path: Path) -> None:
    """Turns (one in Japanese), a fact, a digest and a knowledge document: every index holds
    rows."""
    route(
        fake_model,
        chat="Noted.",
        extract=facts({"topic": "city", "label": "Lives in Porto", "confidence": 0.9}),
        digest=json.dumps({"narrative": "Talked about Porto and trains."}),
    )
    monkeypatch.setenv("RHEO_NOW", "2026-03-03T10:00:00+00:00")
    assert rheo("ask", "I live in Porto and like trains.").exit_code == 0
    assert rheo("ask", "電車が好きです").exit_code == 0
    monkeypatch.setenv("RHEO_NOW", "2026-03-04T10:00:00+00:00")
    assert rheo("ask", "Good morning, Porto again.").exit_code == 0
    assert rheo("maintain").exit_code == 0
    doc = tmp_path / "guide.md"
    doc.write_text("# Trains\n\nThe night train to Porto leaves at ten.\n")
    assert rheo("kb", "add", str(doc)).exit_code == 0
    monkeypatch.setenv("RHEO_NOW", "2026-03-04T10:05:00+00:00")
    for table in ("turns", "memory_items", "digests", "kb_chunks"):
        assert db_rows(Path(str(_home())), f"SELECT count(*) FROM {table}")[0][0] >= 1


def _home() -> str:
    import os

    return os.environ["RHEO_HOME"]


def _damage(home: Path, sql: str) -> None:
    conn = sqlite3.connect(home / "rheo.db")
    conn.executescript(sql)
    conn.close()


def _opens(home: Path, name: str) -> bool:
    conn = sqlite3.connect(home / "rheo.db")
    try:
        conn.execute(f"SELECT rowid FROM {name} LIMIT 0").fetchall()
        return True
    except (sqlite3.DatabaseError, MemoryError):  # random bytes may ask FTS5 for absurd sizes
        return False
    finally:
        conn.close()


def _ledger(home: Path) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in db_rows(home, "SELECT id, role, content FROM turns ORDER BY id")]


def _healthy(rheo: Any) -> dict[str, Any]:
    out = rheo("doctor", "--json")
    report = json.loads(out.stdout)
    assert out.exit_code == 0 and report["healthy"], report
    return report


@pytest.mark.parametrize("index", list(GARBLE))
def test_ask_stores_the_turn_through_a_garbled_index(
    rheo, fake_model, home, monkeypatch, tmp_path, index
):
    _seed(rheo, fake_model, monkeypatch, tmp_path)
    before = _ledger(home)
    _damage(home, GARBLE[index])
    assert not _opens(home, index)  # the damage is real: FTS5 cannot open the index
    result = rheo("ask", "Remember that my locker word is ZANZIBAR. Which trains to Porto?")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Noted.\n"
    lines = result.stderr.strip().splitlines()
    # the repair's note and the request's, no "this exchange was not stored"
    assert len(lines) == 2 and lines[1] == "rheo: note: memory: stored memory #2", lines
    assert lines[0].startswith("rheo: note: the search index was damaged ("), lines[0]
    assert f"rebuilt {index} from the stored rows" in lines[0], lines[0]
    after = _ledger(home)
    assert after[: len(before)] == before
    assert [r[1:] for r in after[len(before) :]] == [
        ("user", "Remember that my locker word is ZANZIBAR. Which trains to Porto?"),
        ("assistant", "Noted."),
    ]
    # The index caught up: the new turn and the old ones are found, the fact was stored.
    found = json.loads(rheo("history", "search", "ZANZIBAR", "--json").stdout)
    assert [t["id"] for t in found] == [after[-2][0]]
    assert json.loads(rheo("history", "search", "Porto", "--json").stdout)
    assert "ZANZIBAR" in rheo("memory", "search", "locker").stdout
    assert "night train" in rheo("kb", "search", "night train").stdout
    assert _opens(home, index)
    _healthy(rheo)


@pytest.mark.parametrize("index", list(GARBLE))
def test_doctor_repair_recreates_a_garbled_index_twice_over(
    rheo, fake_model, home, monkeypatch, tmp_path, index
):
    _seed(rheo, fake_model, monkeypatch, tmp_path)
    ledger = _ledger(home)
    rows = {
        t: [tuple(r) for r in db_rows(home, f"SELECT * FROM {t} ORDER BY id")]
        for t in ("memory_items", "digests", "kb_chunks")
    }
    _damage(home, GARBLE[index])
    out = rheo("doctor", "--json")
    report = json.loads(out.stdout)
    assert out.exit_code == 1
    bad = {c["name"]: c["detail"] for c in report["checks"] if not c["ok"]}
    assert list(bad) == ["search indexes"] and index in bad["search indexes"], bad
    for attempt in (1, 2):
        out = rheo("doctor", "--repair", "--json")
        report = json.loads(out.stdout)
        assert out.exit_code == 0 and report["healthy"], (attempt, report)
        if attempt == 1:
            assert report["repaired"] == [f"rebuilt {index} from their tables"]
        else:
            assert report["repaired"] == []
    shadows = {
        str(r[0])
        for r in db_rows(home, "SELECT name FROM sqlite_master WHERE name LIKE ?", (index + "_%",))
    }
    assert {f"{index}_data", f"{index}_idx", f"{index}_config"} <= shadows
    assert _ledger(home) == ledger
    for table, before in rows.items():
        assert [tuple(r) for r in db_rows(home, f"SELECT * FROM {table} ORDER BY id")] == before
    assert json.loads(rheo("history", "search", "Porto", "--json").stdout)
    assert "Porto" in rheo("memory", "search", "Porto").stdout
    assert "night train" in rheo("kb", "search", "night train").stdout


@pytest.mark.parametrize("case", list(OTHER_DAMAGE))
def test_other_damage_that_stops_an_index_opening_is_mended(
    rheo, fake_model, home, monkeypatch, tmp_path, case
):
    _seed(rheo, fake_model, monkeypatch, tmp_path)
    before = _ledger(home)
    _damage(home, OTHER_DAMAGE[case])
    result = rheo("ask", "Which trains to Porto, ZANZIBAR?")
    assert result.exit_code == 0 and result.stdout == "Noted.\n", result.stderr
    assert "not stored" not in result.stderr and "rebuilt" in result.stderr, result.stderr
    assert len(_ledger(home)) == len(before) + 2
    assert json.loads(rheo("history", "search", "ZANZIBAR", "--json").stdout)
    _healthy(rheo)


@pytest.mark.parametrize("index", list(GARBLE))
def test_writes_other_than_ask_go_through_a_garbled_index(
    rheo, fake_model, home, monkeypatch, tmp_path, index
):
    """`memory add`, `kb add`, a digest written by `maintain`, `import` and `purge`, each on
    a store whose index was just garbled."""
    _seed(rheo, fake_model, monkeypatch, tmp_path)
    exported = tmp_path / "export.jsonl"
    assert rheo("export", "-o", str(exported)).exit_code == 0
    doc = tmp_path / "more.md"
    doc.write_text("# Buses\n\nThe airport bus runs every twenty minutes.\n")

    def garbled(*args: str) -> Any:
        _damage(home, GARBLE[index])
        result = rheo(*args)
        assert result.exit_code == 0, (args, result.stderr)
        assert "Traceback" not in result.stderr and "database error" not in result.stderr
        return result

    garbled("memory", "add", "Prefers the aisle seat", "-t", "seat")
    garbled("kb", "add", str(doc))
    monkeypatch.setenv("RHEO_NOW", "2026-03-05T10:00:00+00:00")  # closes the session
    garbled("ask", "A new day.")
    garbled("maintain")
    assert db_rows(home, "SELECT count(*) FROM digests")[0][0] == 2
    garbled("purge", "turn", "1", "--yes")
    fresh = home.parent / "fresh-home"
    monkeypatch.setenv("RHEO_HOME", str(fresh))
    assert rheo("memory", "add", "x", "-t", "x").exit_code == 0  # a store to garble
    _damage(fresh, GARBLE[index])
    imported = rheo("import", str(exported))
    assert imported.exit_code == 0, imported.stderr
    assert db_rows(fresh, "SELECT count(*) FROM turns")[0][0] == 6
    _healthy(rheo)
    monkeypatch.setenv("RHEO_HOME", str(home))
    assert "aisle" in rheo("memory", "search", "aisle").stdout
    assert "airport bus" in rheo("kb", "search", "airport bus").stdout
    assert not json.loads(rheo("history", "search", "trains", "--json").stdout)  # purged
    assert b"like trains" not in (home / "rheo.db").read_bytes()
    _healthy(rheo)


def test_a_turn_is_stored_even_when_its_index_cannot_be_rebuilt(
    rheo, fake_model, home, monkeypatch, tmp_path
):
    """The last resort: the rebuild itself fails (here made to); the turn is stored without
    being indexed, the note says so, and `doctor --repair` indexes it."""
    _seed(rheo, fake_model, monkeypatch, tmp_path)
    _damage(home, GARBLE["turns_fts"])
    real = health.rebuild_indexes

    def failing(conn: Any, names: Any = None) -> Any:
        raise DatabaseError("database disk image is malformed")

    monkeypatch.setattr(health, "rebuild_indexes", failing)
    result = rheo("ask", "Stored anyway, ZANZIBAR?")
    assert result.exit_code == 0 and result.stdout == "Noted.\n", result.stderr
    assert "not stored" not in result.stderr
    assert "the turn is stored, not yet searchable" in result.stderr, result.stderr
    assert _ledger(home)[-2][1:] == ("user", "Stored anyway, ZANZIBAR?")
    monkeypatch.setattr(health, "rebuild_indexes", real)
    assert rheo("doctor", "--repair").exit_code == 0
    assert json.loads(rheo("history", "search", "ZANZIBAR", "--json").stdout)
