"""One registry recognises every format ``rheo import`` reads by what the file holds, never by
its name; a file that is none of them is refused in one line saying what it holds."""

from __future__ import annotations

import json
import shutil
import sqlite3
import zipfile
from pathlib import Path

import pytest
from helpers import db_rows

from rheo_cli.memory import archive
from rheo_cli.transfer import formats
from rheo_cli.transfer.formats import recognised_name
from rheo_cli.transfer.source import Source, outline

DATA = Path(__file__).resolve().parent.parent / "data"
CHATGPT = DATA / "chatgpt_conversations.json"
CHATGPT_2026 = DATA / "chatgpt_2026"
CLAUDE = DATA / "claude_conversations.json"
CLAUDE_2026 = DATA / "claude_2026_conversations.json"


def sqlite_from(script: Path, path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(script.read_text())
    conn.commit()
    conn.close()
    return path


def zipped(folder: Path, path: Path, prefix: str = "") -> Path:
    """``folder``'s JSON files in a new zip archive at ``path`` (under ``prefix``)."""
    with zipfile.ZipFile(path, "w") as archive_file:
        for file in sorted(folder.glob("*.json")):
            archive_file.write(file, prefix + file.name)
    return path


def test_the_registry_is_one_table_with_one_version() -> None:
    assert formats.NAMES == ("rheo", "llm", "chatgpt", "claude")
    assert formats.HISTORY == ("llm", "chatgpt", "claude")
    assert [f.version for f in formats.FORMATS] == [archive.VERSION, None, None, None]
    assert archive.VERSION == 3
    both = ((False, False), (True, False), (False, True), (True, True))
    assert [archive.version_for(knowledge=k, assistants=a) for k, a in both] == [1, 2, 3, 3]
    with pytest.raises(formats.UnknownFormat, match="unknown format 'mbox'; use one of rheo"):
        formats.by_name("mbox")
    assert formats.by_name(" ChatGPT ").name == "chatgpt"


def test_every_format_is_recognised_by_content_whatever_its_name(rheo, tmp_path: Path) -> None:
    assert rheo("memory", "add", "Ana likes tea", "-t", "drink").exit_code == 0
    export = tmp_path / "backup.txt"  # a rheo export under any name
    assert rheo("export", "-o", str(export)).exit_code == 0
    renamed = tmp_path / "chats.data"
    shutil.copy(CHATGPT, renamed)
    claude = tmp_path / "whatever.json"
    shutil.copy(CLAUDE_2026, claude)
    claude_folder = tmp_path / "claude-export"
    claude_folder.mkdir()
    shutil.copy(CLAUDE_2026, claude_folder / "conversations.json")
    (claude_folder / "users.json").write_text('[{"uuid": "acc-synthetic-0001"}]')
    expected = {
        export: "rheo",
        sqlite_from(DATA / "llm_logs.sql", tmp_path / "history.bin"): "llm",
        sqlite_from(DATA / "llm036_logs.sql", tmp_path / "logs036.db"): "llm",
        renamed: "chatgpt",
        CHATGPT_2026: "chatgpt",
        CHATGPT_2026 / "conversations-001.json": "chatgpt",
        zipped(CHATGPT_2026, tmp_path / "export.bin"): "chatgpt",
        zipped(CHATGPT_2026, tmp_path / "nested.zip", "chatgpt-2026-01/"): "chatgpt",
        CLAUDE: "claude",
        claude: "claude",
        claude_folder: "claude",
        zipped(claude_folder, tmp_path / "data-2026-03-01.zip"): "claude",
    }
    assert {path: recognised_name(path) for path in expected} == expected


def test_structure_decides_not_words_in_the_text(tmp_path: Path) -> None:
    """A Claude.ai conversation whose summary quotes ChatGPT's "mapping" key is still Claude's
    (a search for the word would have said ChatGPT: it comes first)."""
    data = json.loads(CLAUDE_2026.read_text())
    data[0] = {"summary": 'About the "mapping" key of JSON exports', **data[0]}
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(data))
    assert recognised_name(path) == "claude"
    shard = json.loads((CHATGPT_2026 / "conversations-001.json").read_text())
    shard[0]["title"] = 'What does "chat_messages" mean? ' + "x" * 200_000  # keys far apart
    path.write_text(json.dumps(shard))
    assert recognised_name(path) == "chatgpt"


def test_a_sharded_export_whose_first_part_is_empty(tmp_path: Path) -> None:
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "conversations-000.json").write_text("[]")
    shutil.copy(CHATGPT_2026 / "conversations-001.json", folder / "conversations-001.json")
    assert recognised_name(folder) == "chatgpt"
    only_manifest = tmp_path / "manifest-only"
    only_manifest.mkdir()
    shutil.copy(CHATGPT_2026 / "export_manifest.json", only_manifest / "export_manifest.json")
    assert recognised_name(only_manifest) == "chatgpt"


@pytest.mark.parametrize(
    ("content", "shape", "keys"),
    [
        (b"", "empty", ()),
        (b"  \n", "empty", ()),
        (
            b'\xef\xbb\xbf[{"title": null, "mapping": {"a": {"b": [1, {"c": 2}]}}, "x": 1}]',
            "array",
            ("title", "mapping", "x"),
        ),  # fmt: skip
        (
            b'{"type": "header", "format": "rheo-export"}\n{"type": "turn"}\n',
            "object",
            ("type", "format"),
        ),  # fmt: skip
        (b'[{"a": "a \\" quoted \\\\", "b": {"c"', "array", ("a", "b")),  # cut mid-object
        (b"[]", "array", ()),
        (b"hello", "text", ()),
        (b"\x00\x01\x02", "binary", ()),
        (b"SQLite format 3\x00rest", "sqlite", ()),
    ],
)
def test_the_outline_of_a_file_from_its_first_bytes(
    content: bytes, shape: str, keys: tuple
) -> None:
    found = outline(content)
    assert (found.shape, found.keys) == (shape, keys)


def refused(rheo, path: Path) -> str:
    result = rheo("import", str(path))
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rheo: ") and "Traceback" not in lines[0]
    assert "not a file rheo imports" in lines[0] and "--from rheo|llm|chatgpt|claude" in lines[0]
    return lines[0]


def test_a_file_that_is_none_of_them_is_refused_naming_what_it_holds(
    rheo, home: Path, tmp_path: Path
) -> None:
    obj = tmp_path / "notes.json"
    obj.write_text('{"hello": 1, "world": [1, 2]}')
    assert "a JSON object with keys: hello, world" in refused(rheo, obj)
    empty_list = tmp_path / "conversations.json"
    empty_list.write_text("[]")
    assert "an empty JSON array, no conversations" in refused(rheo, empty_list)
    other_db = tmp_path / "other.db"
    sqlite3.connect(other_db).execute("CREATE TABLE notes (x)").connection.commit()
    assert "an SQLite database with tables: notes" in refused(rheo, other_db)
    text = tmp_path / "logs.sql"
    shutil.copy(DATA / "llm_logs.sql", text)
    assert "text that is not JSON" in refused(rheo, text)
    nothing = tmp_path / "empty.jsonl"
    nothing.write_bytes(b"")
    assert "an empty file" in refused(rheo, nothing)
    other_zip = tmp_path / "photos.zip"
    with zipfile.ZipFile(other_zip, "w") as archive_file:
        archive_file.writestr("a.txt", "hello")
    said = refused(rheo, other_zip)
    assert "a zip archive of 1 file, none of them conversations.json" in said
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "conversations.json").write_text('[{"id": 1, "messages": []}]')
    said = refused(rheo, folder)
    assert "a folder whose conversations.json is a JSON array of objects with keys: id" in said
    assert rheo("memory", "add", "Ana likes tea", "-t", "drink").exit_code == 0
    backup = tmp_path / "copy.db"
    assert rheo("backup", str(backup)).exit_code == 0
    assert "rheo's own database, a 'rheo backup' copy" in refused(rheo, backup)
    assert db_rows(home, "SELECT count(*) FROM turns")[0][0] == 0


def test_stdin_is_read_from_its_first_byte_after_it_is_recognised(rheo, tmp_path: Path) -> None:
    assert rheo("memory", "add", "Ana likes tea", "-t", "drink").exit_code == 0
    exported = rheo("export").stdout
    with Source.open(CHATGPT) as source:
        assert source.kind == "file" and source.head.startswith(b"[")
    fresh = tmp_path / "fresh"
    result = rheo("import", "-", "--json", input=exported, RHEO_HOME=str(fresh))
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["added"]["memory_item"] == 1
    chats = rheo("import", "-", "--json", input=CHATGPT.read_bytes())  # recognised there too
    assert chats.exit_code == 0, chats.stderr
    assert json.loads(chats.stdout)["format"] == "chatgpt"
    other = rheo("import", "-", input=b'{"hello": 1}')
    assert other.exit_code == 2 and "stdin: not a file rheo imports: a JSON object" in other.stderr


def test_a_pipe_is_read_once_from_its_first_byte(rheo, home: Path, tmp_path: Path) -> None:
    """``rheo import <(cat conversations.json)``: a pipe cannot be read twice, so what was
    looked at to recognise it is given again to the reader."""
    import os
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(CLAUDE_2026.read_bytes()))
    writer.start()
    result = rheo("import", str(fifo), "--json")
    writer.join(timeout=10)
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["format"], summary["turns"]) == ("claude", 6)
    assert db_rows(home, "SELECT count(*) FROM turns")[0][0] == 6


def test_json_nested_deeper_than_python_reads_is_one_line(rheo, home: Path, tmp_path: Path):
    """A file of JSON nested thousands deep, alone or after a valid export header: one line
    naming the problem, nothing imported, never a traceback."""
    deep = '{"a":' * 5000 + "1" + "}" * 5000
    alone = tmp_path / "deep.json"
    alone.write_text(deep + "\n")
    assert "a JSON object with keys: a" in refused(rheo, alone)
    header = home / "x.jsonl"
    assert rheo("export", "-o", str(header)).exit_code == 0
    after = tmp_path / "deep.jsonl"
    after.write_text(header.read_text().splitlines()[0] + "\n" + deep + "\n")
    result = rheo("import", str(after))
    assert result.exit_code != 0 and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        f"rheo: {after}: line 2: JSON nested too deeply; nothing was imported"
    )
