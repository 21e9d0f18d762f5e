"""A Claude.ai export as 2026 writes it: ``conversations.json``, a bare JSON array of
conversations with their 2025-2026 fields (summary, model, settings, project_uuid, text in
``content`` blocks beside thinking and tool blocks, ``files_v2``, a null ``name``), given as the
file under any name, the folder or the zip. Synthetic fixture:
tests/data/claude_2026_conversations.json."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

from helpers import db_rows

DATA = Path(__file__).resolve().parent.parent / "data"
BARE = DATA / "claude_2026_conversations.json"


def imported(rheo, *args: str) -> dict:
    result = rheo("import", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_the_bare_array_is_read_with_its_2026_fields(rheo, home: Path) -> None:
    summary = imported(rheo, str(BARE))
    assert summary["format"] == "claude"
    assert (summary["conversations"], summary["turns"], summary["sessions"]) == (2, 6, 2)
    assert summary["skipped"] == {}
    turns = db_rows(home, "SELECT * FROM turns ORDER BY id")
    assert [t["role"] for t in turns] == ["user", "assistant"] * 3
    assert turns[0]["content"] == (
        "Should our metrics go in Postgres or a time-series store?\n\n"
        "[attachment: load_2025.csv]"  # from files_v2
    )
    # only the text block: thinking, tool use and tool results are left out
    assert turns[1]["content"] == (
        "Postgres with a BRIN index handles your load; revisit above 50k writes a second."
    )
    assert [t["ts"] for t in turns[:4]] == [
        "2026-02-14T10:04:22.000Z",
        "2026-02-14T10:04:40.500Z",
        "2026-02-14T10:04:40.500Z",  # no created_at: the time of the message before it
        "2026-02-14T10:22:41.000Z",
    ]
    assert json.loads(turns[0]["meta"]) == {  # a null name: an untitled conversation
        "imported": "claude",
        "conversation": "claude:5d0c1a2b-2026-4000-8000-000000000001",
    }
    assert "title" not in json.loads(turns[4]["meta"])  # an empty name too
    assert turns[3]["session_id"] == turns[0]["session_id"] != turns[4]["session_id"]


def test_the_folder_and_the_zip_are_the_same_export(rheo, home: Path, tmp_path: Path) -> None:
    folder = tmp_path / "data-2026-03-02"
    folder.mkdir()
    shutil.copy(BARE, folder / "conversations.json")
    (folder / "users.json").write_text('[{"uuid": "acc-synthetic-0001"}]')
    (folder / "projects.json").write_text("[]")
    first = imported(rheo, str(folder))
    assert (first["format"], first["turns"]) == ("claude", 6)
    archive_path = tmp_path / "claude-export.zip"
    with zipfile.ZipFile(archive_path, "w") as out:
        for file in sorted(folder.iterdir()):
            out.write(file, file.name)
    again = imported(rheo, str(archive_path))
    assert again["turns"] == 0 and again["skipped"]["already imported"] == 6
    copy = tmp_path / "claude.txt"  # the file itself under another name
    shutil.copy(BARE, copy)
    third = imported(rheo, str(copy))
    assert third["turns"] == 0 and third["skipped"]["already imported"] == 6
    assert db_rows(home, "SELECT count(*) FROM turns")[0][0] == 6
