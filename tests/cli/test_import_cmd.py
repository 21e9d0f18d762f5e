"""``rheo import`` is the one command that brings data in; ``rheo import-history`` is its alias,
kept for scripts, with the same behaviour (with or without a FORMAT)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from helpers import db_rows, run_rheo

DATA = Path(__file__).resolve().parent.parent / "data"
CHATGPT = DATA / "chatgpt_conversations.json"
SHARDED = DATA / "chatgpt_2026"


def store(home: Path) -> list[tuple]:
    rows = db_rows(home, "SELECT session_id, role, content, ts, model, meta, source_key FROM turns")
    return [tuple(r) for r in rows] + [tuple(r) for r in db_rows(home, "SELECT * FROM sessions")]


@pytest.fixture
def llm_db(tmp_path: Path) -> Path:
    path = tmp_path / "logs.db"
    conn = sqlite3.connect(path)
    conn.executescript((DATA / "llm_logs.sql").read_text())
    conn.commit()
    conn.close()
    return path


@pytest.mark.parametrize("fmt", ["chatgpt", "claude", "llm", "chatgpt-2026"])
def test_the_alias_and_import_leave_the_same_store(
    rheo, home: Path, tmp_path: Path, llm_db: Path, monkeypatch, fmt: str
) -> None:
    path = {
        "chatgpt": CHATGPT,
        "claude": DATA / "claude_conversations.json",
        "llm": llm_db,
        "chatgpt-2026": SHARDED,
    }[fmt]
    name = fmt.split("-")[0]
    outputs = []
    for n, args in enumerate(
        (
            ("import", str(path)),
            ("import", str(path), "--from", name),
            ("import-history", name, str(path)),
            ("import-history", str(path)),
        )
    ):
        monkeypatch.setenv("RHEO_HOME", str(tmp_path / f"home-{n}"))
        result = rheo(*args, "--json")
        assert result.exit_code == 0, (args, result.stderr)
        outputs.append((json.loads(result.stdout), store(tmp_path / f"home-{n}")))
    assert all(out == outputs[0] for out in outputs), fmt
    assert outputs[0][0]["format"] == name and outputs[0][0]["turns"] > 0


def test_extract_is_an_option_of_import_too(rheo, home: Path) -> None:
    done = rheo("import", str(CHATGPT), "--extract")
    assert done.exit_code == 0, done.stderr
    assert "queued 3 extraction and 2 digest jobs" in done.stdout
    assert db_rows(home, "SELECT count(*) FROM jobs")[0][0] == 5


def test_a_rheo_export_refuses_extract_and_keeps_its_profiles(rheo, home, tmp_path) -> None:
    assert rheo("-p", "work", "memory", "add", "Ana likes tea", "-t", "drink").exit_code == 0
    exported = tmp_path / "work.jsonl"
    assert rheo("-p", "work", "export", "-o", str(exported)).exit_code == 0
    refused = rheo("import", str(exported), "--extract")
    assert refused.exit_code == 2 and "--extract is for other tools' history" in refused.stderr
    fresh = tmp_path / "fresh"
    done = rheo("import", str(exported), "--profile", "home", RHEO_HOME=str(fresh))
    assert done.exit_code == 0, done.stderr
    assert [r[0] for r in db_rows(fresh, "SELECT profile FROM memory_items")] == ["work"]


@pytest.mark.boundary
def test_the_alias_says_it_is_one_and_only_import_is_listed() -> None:
    listed = run_rheo("--help").stdout.decode()
    assert "\n  import " in listed and "import-history" not in listed
    alias = run_rheo("import-history", "--help").stdout.decode()
    assert "Usage: rheo import-history [OPTIONS] [FORMAT] FILE" in alias
    assert "Alias of 'rheo import'" in alias and "rheo import FILE --from FORMAT" in alias
    own = run_rheo("import", "--help").stdout.decode()
    assert "recognises what FILE holds by its content" in own and "is an alias" in own


def test_the_alias_keeps_its_usage_errors(rheo, tmp_path: Path) -> None:
    for args, message in (
        (("import-history", "chatgpt"), "name the file to import: rheo import-history chatgpt"),
        (("import-history", "mbox", str(CHATGPT)), "unknown history format 'mbox'"),
        (("import-history", "claude", str(tmp_path / "missing.json")), "no such file"),
        (("import-history", "a", "b", "c"), "too many arguments: c"),
        (("import", str(CHATGPT), "--from", "myspace"), "unknown format 'myspace'"),
    ):
        result = rheo(*args)
        assert result.exit_code == 2, args
        assert message in result.stderr and result.stderr.count("\n") == 1, result.stderr
    missing = rheo("import", str(tmp_path / "missing.jsonl"))
    assert missing.exit_code == 1 and "cannot read" in missing.stderr
