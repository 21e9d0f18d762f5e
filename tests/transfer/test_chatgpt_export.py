"""A ChatGPT export in its 2026 sharded form (``conversations-000.json``, ``-001`` ... beside
``export_manifest.json``), given as the folder, the zip or one part, with null titles and
missing fields; synthetic fixtures in tests/data/chatgpt_2026 (see its README.md)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest
from helpers import db_rows

DATA = Path(__file__).resolve().parent.parent / "data"
SHARDED = DATA / "chatgpt_2026"

SKIPPED = {
    "message without an author role": 1,
    "message without content": 1,
    "reasoning_recap content": 1,
    "thoughts content": 1,
    "tool message": 1,
}
KEYS = [
    "chatgpt:n-u1",  # the node's id: neither node nor message has an "id"
    "chatgpt:m-a1",
    "chatgpt:m-u2",
    "chatgpt:m-a2",
    "chatgpt:m-p1",
    "chatgpt:m-p5",
]


def imported(rheo, *args: str) -> dict:
    result = rheo("import", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def zipped(path: Path, prefix: str = "") -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for file in sorted(SHARDED.iterdir()):
            out.write(file, prefix + file.name)
    return path


def test_the_folder_is_read_part_after_part(rheo, home: Path) -> None:
    summary = imported(rheo, str(SHARDED))
    assert summary["format"] == "chatgpt"
    assert (summary["conversations"], summary["turns"], summary["sessions"]) == (3, 6, 3)
    assert summary["skipped"] == SKIPPED
    turns = db_rows(home, "SELECT * FROM turns ORDER BY id")
    assert [t["source_key"] for t in turns] == KEYS
    assert [t["ts"] for t in turns] == [
        "2026-01-05T10:00:00.250Z",
        "2026-01-05T10:00:00.250Z",  # no create_time: the time of the message it answers
        "2026-01-06T12:00:00.000Z",
        "2026-01-06T12:00:06.500Z",
        "2026-01-15T12:00:00.000Z",
        "2026-01-15T12:00:15.000Z",
    ]
    assert [t["model"] for t in turns] == [None, None, None, "gpt-5-t-mini", None, "gpt-5"]
    assert turns[1]["content"] == "Noted: boiler service on the 14th."
    metas = [json.loads(t["meta"]) for t in turns]
    # a null title is an untitled conversation; no current_node: the last children are walked
    assert metas[0] == {"imported": "chatgpt", "conversation": "chatgpt:c26-boiler"}
    assert metas[2]["title"] == "Sourdough hydration"
    assert metas[4] == {
        "imported": "chatgpt",
        "conversation": "chatgpt:c26-porto",  # "id" stands in for "conversation_id"
        "title": "Trip to Porto",
    }


def test_the_zip_and_the_folder_are_the_same_export(rheo, home: Path, tmp_path: Path) -> None:
    first = imported(rheo, str(zipped(tmp_path / "chatgpt-export.zip")))
    assert (first["conversations"], first["turns"]) == (3, 6) and first["skipped"] == SKIPPED
    before = db_rows(home, "SELECT source_key, content, ts FROM turns ORDER BY id")
    again = imported(rheo, str(SHARDED))
    assert again["turns"] == 0 and again["skipped"]["already imported"] == 6
    nested = imported(rheo, str(zipped(tmp_path / "download.bin", "Export-2026-01-20/")))
    assert nested["turns"] == 0 and nested["skipped"]["already imported"] == 6
    assert db_rows(home, "SELECT source_key, content, ts FROM turns ORDER BY id") == before
    assert [tuple(r)[0] for r in before] == KEYS


def test_one_part_alone_is_read_alone_with_a_note(rheo, home: Path) -> None:
    result = rheo("import", str(SHARDED / "conversations-001.json"), "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["conversations"], summary["turns"]) == (1, 2)
    assert [r[0] for r in db_rows(home, "SELECT source_key FROM turns")] == KEYS[4:]
    note = result.stderr.strip().splitlines()
    assert len(note) == 1 and note[0].startswith("rheo: note: conversations-001.json is one of")
    assert "2 parts" in note[0] and f"rheo import {SHARDED}" in note[0]
    rest = imported(rheo, str(SHARDED))  # the whole folder afterwards adds only the rest
    assert rest["turns"] == 4 and rest["skipped"]["already imported"] == 2


def test_a_part_the_manifest_lists_but_the_export_lacks_stops_the_import(
    rheo, home: Path, tmp_path: Path
) -> None:
    cut = tmp_path / "cut-short"
    shutil.copytree(SHARDED, cut)
    (cut / "conversations-001.json").unlink()
    result = rheo("import", str(cut))
    assert result.exit_code == 2, result.stdout
    line = result.stderr.strip()
    assert line.count("\n") == 0 and "export_manifest.json lists conversations-001.json" in line
    assert "the export is incomplete" in line
    assert not (home / "rheo.db").exists() or not db_rows(home, "SELECT * FROM turns")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda c: c.update(mapping=[]),
            "conversations-001.json: conversation 1 "
            "('Trip to Porto'): no 'mapping' of message nodes",
        ),  # fmt: skip
        (
            lambda c: c["mapping"]["p5"]["message"].update(create_time="noon"),
            "create_time 'noon' is not a number of seconds",
        ),  # fmt: skip
        (
            lambda c: c["mapping"]["p5"]["message"].update(content="text"),
            "message content is not an object",
        ),  # fmt: skip
    ],
)
def test_a_malformed_part_names_its_file_and_conversation(
    rheo, home: Path, tmp_path: Path, change, message: str
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(SHARDED, broken)
    part = broken / "conversations-001.json"
    data = json.loads(part.read_text())
    change(data[0])
    part.write_text(json.dumps(data))
    result = rheo("import", str(broken))
    assert result.exit_code == 2, result.stdout
    assert message in result.stderr and result.stderr.count("\n") == 1, result.stderr
    assert not (home / "rheo.db").exists() or not db_rows(home, "SELECT * FROM turns")


def test_the_folders_of_an_export_zip_are_not_its_conversations(rheo, tmp_path: Path) -> None:
    """Only the shallowest conversation files count: a copy of a part in a subfolder (a
    project's files, an earlier download) is not read twice."""
    folder = tmp_path / "export"
    shutil.copytree(SHARDED, folder)
    (folder / "old").mkdir()
    shutil.copy(SHARDED / "conversations-000.json", folder / "old" / "conversations-000.json")
    summary = imported(rheo, str(folder))
    assert summary["turns"] == 6 and "duplicate message id in the file" not in summary["skipped"]
