"""``rheo backup``, ``rheo export``, ``rheo import``: a consistent copy while another process
writes; JSON Lines that round-trip to an identical re-export; imports that never duplicate and
never half-apply."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

import netguard
import pytest
from fakeprovider import facts
from helpers import REPO, db_rows, route, run_rheo

T0 = datetime.fromisoformat("2026-08-20T18:00:00+02:00")


def seed(rheo, fake_model, monkeypatch):
    """Two sessions with turns, extracted facts (one superseding another), a digest, a manual
    memory with odd characters, and a second profile."""
    route(
        fake_model,
        chat=["Noted.", "Sure.", "Fine."],
        extract=[
            facts(
                {"category": "fact", "topic": "city", "label": "Lives in Lyon", "confidence": 0.9}
            ),  # fmt: skip
            facts(
                {"category": "fact", "topic": "city", "label": "Lives in Paris", "confidence": 0.9}
            ),  # fmt: skip
            facts(),
        ],
        digest=json.dumps({"narrative": "Talked about moving.", "facts": []}),
    )
    monkeypatch.setenv("RHEO_NOW", T0.isoformat())
    assert rheo("ask", "I live in Lyon").exit_code == 0
    assert rheo("maintain").exit_code == 0
    monkeypatch.setenv("RHEO_NOW", (T0 + timedelta(hours=5)).isoformat())
    assert rheo("ask", "I moved to Paris \u2028 \U0001f600 \x1b[2J").exit_code == 0
    assert rheo("maintain").exit_code == 0
    assert rheo("memory", "add", "Likes \u202e tea", "-t", "tea", "--pin").exit_code == 0
    assert rheo("-p", "work", "ask", "work question").exit_code == 0


def test_export_import_round_trips_to_an_identical_export(
    rheo, fake_model, monkeypatch, home, tmp_path
):
    seed(rheo, fake_model, monkeypatch)
    first = rheo("export", "--all")
    assert first.exit_code == 0, first.stderr
    lines = first.stdout.splitlines()
    head = json.loads(lines[0])
    assert head == {"type": "header", "format": "rheo-export", "version": 1,
                    "profiles": ["default", "work"]}  # fmt: skip
    kinds = {json.loads(ln)["type"] for ln in lines[1:]}
    assert kinds == {"session", "turn", "digest", "memory_item", "memory_event"}
    assert not any('"id"' in ln for ln in lines)  # no local ids, only keys
    exported = tmp_path / "all.jsonl"
    exported.write_text(first.stdout)
    fresh = tmp_path / "fresh-home"
    monkeypatch.setenv("RHEO_HOME", str(fresh))
    result = rheo("import", str(exported), "--json")
    assert result.exit_code == 0, result.stderr
    added = json.loads(result.stdout)["added"]
    assert added["turn"] == 6 and added["digest"] == 1 and added["memory_item"] >= 3
    again = rheo("export", "--all")
    assert again.stdout == first.stdout
    # Importing twice adds nothing.
    twice = json.loads(rheo("import", str(exported), "--json").stdout)
    assert sum(twice["added"].values()) == 0 and twice["already_present"] == len(lines) - 1
    assert rheo("export", "--all").stdout == first.stdout
    # The imported store works: search, memory, sessions.
    assert "Lyon" in rheo("history", "search", "Lyon").stdout
    listed = json.loads(rheo("memory", "list", "--all", "--json").stdout)
    paris = next(m for m in listed if m["content"]["label"] == "Lives in Paris")
    lyon = next(m for m in listed if m["content"]["label"] == "Lives in Lyon")
    assert lyon["status"] == "superseded" and lyon["superseded_by"] == paris["id"]


def test_import_into_a_store_with_more_data_adds_only_what_is_missing(
    rheo, fake_model, monkeypatch, tmp_path
):
    seed(rheo, fake_model, monkeypatch)
    exported = tmp_path / "one.jsonl"
    assert rheo("export", "-o", str(exported)).exit_code == 0
    assert stat.S_IMODE(exported.stat().st_mode) == 0o600
    before = rheo("export").stdout
    fake_model.add("later")
    monkeypatch.setenv("RHEO_NOW", (T0 + timedelta(hours=5, minutes=5)).isoformat())
    assert rheo("ask", "a later question").exit_code == 0
    result = json.loads(rheo("import", str(exported), "--json").stdout)
    assert sum(result["added"].values()) == 0
    assert len(rheo("export").stdout.splitlines()) == len(before.splitlines()) + 2


def test_a_malformed_line_is_reported_and_nothing_is_imported(rheo, fake_model, monkeypatch, home,
                                                              tmp_path):  # fmt: skip
    seed(rheo, fake_model, monkeypatch)
    lines = rheo("export").stdout.splitlines()
    fresh = tmp_path / "fresh"
    monkeypatch.setenv("RHEO_HOME", str(fresh))
    for bad, expected in (
        ('{"type": "turn", "key": "x"', "line 6: not valid JSON"),
        ('{"type": "turn", "key": "tx", "profile": "default", "session": "nope", '
         '"role": "user", "content": "c", "ts": "2026-01-01T00:00:00.000Z"}',
         "line 6: session 'nope' is not a record"),
        ('{"type": "turn", "key": "ty", "profile": "default"}', "line 6: a turn record needs"),
        ('{"type": "wat", "key": "k", "profile": "default"}', "line 6: unknown record type"),
        ("[1, 2]", "line 6: a record must be a JSON object"),
    ):  # fmt: skip
        broken = tmp_path / "broken.jsonl"
        broken.write_text("\n".join(lines[:5] + [bad] + lines[5:]) + "\n")
        result = rheo("import", str(broken))
        assert result.exit_code == 1, result.stdout
        assert expected in result.stderr and "nothing was imported" in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
        if (fresh / "rheo.db").exists():
            for table in ("turns", "sessions", "memory_items", "memory_events", "digests"):
                assert db_rows(fresh, f"SELECT count(*) FROM {table}")[0][0] == 0, table


def test_other_tools_history_is_handed_to_the_history_importer(rheo, home):
    sample = REPO / "tests" / "data" / "chatgpt_conversations.json"
    result = rheo("import", str(sample), "--json")
    assert result.exit_code == 0, result.stderr
    assert db_rows(home, "SELECT count(*) FROM turns WHERE source_key LIKE 'chatgpt:%'")[0][0]
    again = rheo("import", str(sample), "--from", "chatgpt")
    assert again.exit_code == 0


def test_formats_are_sniffed_or_named(rheo, tmp_path):
    other = tmp_path / "other.json"
    other.write_text('{"hello": 1}')
    result = rheo("import", str(other))
    assert result.exit_code == 2 and "--from" in result.stderr
    unknown = rheo("import", str(other), "--from", "myspace")
    assert unknown.exit_code == 2 and "unknown format" in unknown.stderr
    assert rheo("import", str(tmp_path / "missing.jsonl")).exit_code == 1
    newer = tmp_path / "newer.jsonl"
    newer.write_text('{"type": "header", "format": "rheo-export", "version": 99}\n')
    result = rheo("import", str(newer))
    assert result.exit_code == 1 and "version 99" in result.stderr


WRITER = """
import sys, time
from datetime import datetime, timezone, timedelta
from rheo_cli.memory.store.db import open_store
from rheo_cli.memory.ledger import turns
conn = open_store(sys.argv[1])
start = datetime(2026, 1, 1, tzinfo=timezone.utc)
i = 0
deadline = time.time() + float(sys.argv[2])
while time.time() < deadline:
    turns.append_turn(conn, profile="default", role="user", content=f"turn {i} " + "x" * 500,
                      now=start + timedelta(seconds=i), gap_s=7200)
    i += 1
print(i)
"""


@pytest.mark.boundary
def test_backup_while_another_process_writes(tmp_path):
    db = tmp_path / "home" / "rheo.db"
    from rheo_cli.memory.store.db import open_store

    conn = open_store(db)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), "4"],
        env=netguard.subprocess_env(dict(os.environ)),
        cwd=str(REPO),
        stdout=subprocess.PIPE,
    )
    copies = []
    try:
        time.sleep(1.0)
        for n in range(3):
            dest = tmp_path / "backups" / f"copy{n}.db"
            conn.store.backup(str(dest), export=lambda path: 0)
            copies.append(dest)
            time.sleep(0.5)
    finally:
        written = int(writer.communicate(timeout=60)[0])
    assert written > 50
    counts = []
    for dest in copies:
        assert stat.S_IMODE(dest.stat().st_mode) == 0o600
        assert not dest.with_name(dest.name + "-wal").exists()
        copy = sqlite3.connect(dest)
        assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert (
            copy.execute("INSERT INTO turns_fts(turns_fts, rank) VALUES ('integrity-check', 1)")
            is not None
        )
        n_turns = copy.execute("SELECT count(*) FROM turns").fetchone()[0]
        # A consistent snapshot: the session's counter matches its turns.
        assert copy.execute("SELECT sum(turns) FROM sessions").fetchone()[0] == n_turns
        counts.append(n_turns)
        copy.close()
    assert 0 < counts[0] <= counts[-1] <= written
    conn.close()


def test_backup_cli_refuses_an_existing_file(rheo, fake_model, tmp_path):
    fake_model.add("hi")
    assert rheo("ask", "hello").exit_code == 0
    dest = tmp_path / "b.db"
    assert rheo("backup", str(dest)).exit_code == 0
    again = rheo("backup", str(dest))
    assert again.exit_code == 2 and "already exists" in again.stderr  # usage, as a bad folder
    monkey_home = dest.parent / "restored"
    monkey_home.mkdir()
    os.replace(dest, monkey_home / "rheo.db")
    rows = sqlite3.connect(monkey_home / "rheo.db").execute("SELECT content FROM turns").fetchall()
    assert rows[0][0] == "hello"


def test_a_bad_time_is_refused_before_anything_is_imported(
    rheo, fake_model, monkeypatch, home, tmp_path
):
    import json

    seed(rheo, fake_model, monkeypatch)
    lines = rheo("export").stdout.splitlines()
    turn_line = next(n for n, line in enumerate(lines) if json.loads(line)["type"] == "turn")
    fresh = tmp_path / "fresh"
    monkeypatch.setenv("RHEO_HOME", str(fresh))
    for bad in ("garbage", "2026-11-20 10:00", "9999-12-31T23:59:59.000Z", 12):
        record = json.loads(lines[turn_line])
        record["ts"] = bad
        broken = tmp_path / "broken.jsonl"
        broken.write_text(
            "\n".join([*lines[:turn_line], json.dumps(record), *lines[turn_line + 1 :]]) + "\n"
        )
        result = rheo("import", str(broken))
        assert result.exit_code == 1, (bad, result.stdout)
        assert f"line {turn_line + 1}: ts" in result.stderr, result.stderr
        assert "nothing was imported" in result.stderr
        if (fresh / "rheo.db").exists():
            assert db_rows(fresh, "SELECT count(*) FROM turns")[0][0] == 0
    assert rheo("history", "recent").exit_code == 0  # the store is still usable


def test_the_knowledge_base_is_exported_and_imported(rheo, fake_model, monkeypatch, tmp_path):
    seed(rheo, fake_model, monkeypatch)
    doc = tmp_path / "pricing.md"
    doc.write_text("# Pricing\n\n## Refunds\n\nRefunds within 30 days.\n")
    assert rheo("kb", "add", str(doc)).exit_code == 0
    doc.write_text("# Pricing\n\n## Refunds\n\nRefunds within 45 days.\n")
    assert rheo("kb", "add", str(doc)).exit_code == 0
    first = rheo("export", "--all")
    assert first.exit_code == 0, first.stderr
    lines = [json.loads(ln) for ln in first.stdout.splitlines()]
    assert lines[0]["version"] == 2
    assert [r["version"] for r in lines if r["type"] == "kb_document"] == [1, 2]
    exported = tmp_path / "all.jsonl"
    exported.write_text(first.stdout)
    monkeypatch.setenv("RHEO_HOME", str(tmp_path / "fresh-home"))
    result = rheo("import", str(exported), "--json")
    assert result.exit_code == 0, result.stderr
    added = json.loads(result.stdout)["added"]
    assert added["kb_document"] == 2 and added["kb_chunk"] == 2
    assert rheo("export", "--all").stdout == first.stdout
    assert "45 days" in rheo("kb", "search", "refunds").stdout
    listed = json.loads(rheo("kb", "list", "--all", "--json").stdout)
    assert sorted(d["status"] for d in listed) == ["active", "replaced"]


@pytest.mark.boundary
def test_a_backup_killed_mid_way_leaves_no_file_under_its_name(rheo, home, tmp_path):
    assert rheo("memory", "add", "Ana likes tea", "-t", "drink").exit_code == 0
    dest = tmp_path / "out" / "b.db"
    dest.parent.mkdir()
    env = {**os.environ, "RHEO_HOME": str(home), "RHEO_CRASH_AT": "backup.copy:1"}
    killed = run_rheo("backup", str(dest), env=env)
    assert killed.returncode == -9
    assert not dest.exists()
    left = list(dest.parent.iterdir())
    assert [p.name.startswith(".b.db.") and p.name.endswith(".partial") for p in left] == [True]
    done = rheo("backup", str(dest))
    assert done.exit_code == 0, done.stderr
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    copy = sqlite3.connect(dest)
    assert copy.execute("SELECT label FROM memory_items").fetchone()[0] == "Ana likes tea"
    copy.close()


def test_an_export_to_a_file_appears_only_complete(rheo, home, tmp_path, monkeypatch):
    assert rheo("memory", "add", "Ana likes tea", "-t", "drink").exit_code == 0
    from rheo_cli.transfer import rheo_jsonl

    def broken(records, out):
        out.write("{}\n")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(rheo_jsonl, "write", broken)
    dest = tmp_path / "e.jsonl"
    result = rheo("export", "-o", str(dest))
    assert result.exit_code != 0
    assert list(tmp_path.glob("*e.jsonl*")) == []


def test_a_reinforced_fact_round_trips_and_imports_once(rheo, fake_model, monkeypatch, tmp_path):
    """Event data and item properties are JSON the engine writes in its own key order; the
    file holds them with sorted keys. Their keys must not depend on that order."""
    fact = {"category": "fact", "topic": "car", "label": "Drives a Volvo", "confidence": 0.8,
            "properties": {"model": "XC40", "colour": "red"}}  # fmt: skip
    route(fake_model, chat="Noted.", extract=facts(fact))
    monkeypatch.setenv("RHEO_NOW", T0.isoformat())
    assert rheo("ask", "I drive a red Volvo XC40").exit_code == 0
    assert rheo("ask", "my Volvo XC40 is red, as I said").exit_code == 0
    assert rheo("maintain").exit_code == 0
    first = rheo("export").stdout
    kinds = [json.loads(ln)["kind"] for ln in first.splitlines() if '"memory_event"' in ln]
    assert kinds == ["created", "reinforced"]
    exported = tmp_path / "one.jsonl"
    exported.write_text(first)
    assert sum(json.loads(rheo("import", str(exported), "--json").stdout)["added"].values()) == 0
    monkeypatch.setenv("RHEO_HOME", str(tmp_path / "fresh"))
    assert rheo("import", str(exported)).exit_code == 0
    assert rheo("export").stdout == first
    twice = json.loads(rheo("import", str(exported), "--json").stdout)
    assert sum(twice["added"].values()) == 0


def test_a_file_from_before_canonical_keys_is_still_recognised(rheo, fake_model, monkeypatch):
    from rheo_cli.memory.archive import keys

    fact = {"category": "fact", "topic": "car", "label": "Drives a Volvo", "confidence": 0.8,
            "properties": {"model": "XC40", "colour": "red"}}  # fmt: skip
    route(fake_model, chat="Noted.", extract=facts(fact))
    monkeypatch.setenv("RHEO_NOW", T0.isoformat())
    assert rheo("ask", "I drive a red Volvo XC40").exit_code == 0
    assert rheo("ask", "my Volvo XC40 is red, as I said").exit_code == 0
    assert rheo("maintain").exit_code == 0
    now = rheo("export").stdout
    with monkeypatch.context() as old_rheo:  # keys from the stored JSON text, as before
        old_rheo.setattr(keys, "_canonical", lambda text: text)
        before = rheo("export").stdout
    assert before != now  # the engine's own key order differs from the sorted one
    old_file = Path(os.environ["RHEO_HOME"]) / "old.jsonl"
    old_file.write_text(before)
    result = json.loads(rheo("import", str(old_file), "--json").stdout)
    assert sum(result["added"].values()) == 0


def test_an_assistants_fact_stays_its_own_through_export_and_import(
    rheo, monkeypatch, home, tmp_path
):
    config = '[assistants.sarah]\ndescription = "customer service"\n'
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(config)
    assert rheo("memory", "add", "Prefers SMS for follow-ups", "-t", "follow-ups").exit_code == 0
    added = rheo("memory", "add", "Send follow-ups by email", "-t", "follow-ups", "-a", "sarah")
    assert added.exit_code == 0, added.stderr

    def seen(*args: str) -> set[str]:
        listed = json.loads(rheo("memory", "list", "--json", *args).stdout)
        return {m["content"]["label"] for m in listed}

    assert seen() == {"Prefers SMS for follow-ups"}
    assert seen("-a", "sarah") == {"Send follow-ups by email"}
    first = rheo("export")
    assert json.loads(first.stdout.splitlines()[0])["version"] == 3
    exported = tmp_path / "team.jsonl"
    exported.write_text(first.stdout)
    fresh = tmp_path / "fresh-home"
    fresh.mkdir()
    (fresh / "config.toml").write_text(config)
    monkeypatch.setenv("RHEO_HOME", str(fresh))
    assert rheo("import", str(exported)).exit_code == 0
    assert seen() == {"Prefers SMS for follow-ups"}  # Sarah's fact did not become shared
    assert seen("-a", "sarah") == {"Send follow-ups by email"}
    assert rheo("export").stdout == first.stdout


def test_backup_to_a_folder_is_refused_in_one_line_and_writes_nothing(rheo, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert rheo("memory", "add", "Drinks tea", "-t", "tea").exit_code == 0
    (tmp_path / "bkdir").mkdir()
    for raw in ("bkdir", "bkdir/", "newdir/", "nodir/x.db"):
        result = rheo("backup", raw)
        assert result.exit_code == 2, (raw, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "newdir/rheo-backup.db" in rheo("backup", "newdir/").stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bkdir", "rheo-home"]
    assert list((tmp_path / "bkdir").iterdir()) == []
    assert rheo("backup", "bkdir/mine.db").exit_code == 0


def test_export_replaces_an_existing_file_only_with_force(rheo, tmp_path):
    dest = tmp_path / "e.jsonl"
    assert rheo("memory", "add", "Ana likes tea", "-t", "ana").exit_code == 0
    assert rheo("export", "-o", str(dest)).exit_code == 0
    first = dest.read_text()
    assert rheo("memory", "add", "Bo likes coffee", "-t", "bo").exit_code == 0
    refused = rheo("export", "-o", str(dest))
    assert refused.exit_code == 2 and "--force" in refused.stderr
    assert dest.read_text() == first
    replaced = rheo("export", "-o", str(dest), "--force")
    assert replaced.exit_code == 0, replaced.stderr
    assert "Bo likes coffee" in dest.read_text() and "Bo likes coffee" not in first
    assert dest.stat().st_mode & 0o777 == 0o600
    folder = tmp_path / "folder"
    folder.mkdir()
    wrong = rheo("export", "-o", str(folder), "--force")
    assert wrong.exit_code in (1, 2) and "Traceback" not in wrong.stderr and folder.is_dir()
