"""``rheo kb add`` with several files: one that cannot be added is skipped, saying why."""

from __future__ import annotations

import json


def test_a_binary_among_several_is_skipped_and_the_others_added(rheo, tmp_path):
    notes, picture = tmp_path / "notes.md", tmp_path / "photo.png"
    notes.write_text("# Pricing\n\nThe basic plan costs 10 euros.\n")
    picture.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00binary")
    result = rheo("kb", "add", str(notes), str(picture))
    assert result.exit_code == 1
    assert "added: " in result.stdout and "notes.md" in result.stdout
    assert f"skipped {picture} is not a text file" in result.stderr
    assert "added 1 of 2 files" in result.stderr
    listed = json.loads(rheo("kb", "list", "--json").stdout)
    assert [d["source"].endswith("notes.md") for d in listed] == [True]


def test_when_no_file_can_be_added_nothing_is_and_it_is_a_usage_error(rheo, tmp_path):
    picture = tmp_path / "photo.png"
    picture.write_bytes(b"\x00\x01")
    result = rheo("kb", "add", str(picture), str(tmp_path / "missing.md"))
    assert result.exit_code == 2 and "is not a text file" in result.stderr
    assert json.loads(rheo("kb", "list", "--json").stdout) == []
