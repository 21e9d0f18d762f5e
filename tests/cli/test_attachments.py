"""``rheo ask -f PATH``: files given as named documents after the question."""

from __future__ import annotations

from helpers import db_rows


def test_several_files_follow_the_question_with_their_names(rheo, fake_model, home, tmp_path):
    notes, todo = tmp_path / "notes.md", tmp_path / "todo.txt"
    notes.write_text("# Trip\n\nLisbon in May.\n")
    todo.write_text("book the hotel\n")
    fake_model.add("Book the hotel.")
    result = rheo("ask", "-f", str(notes), "--file", str(todo), "what is left?")
    assert result.exit_code == 0, result.stderr
    sent = fake_model.last.messages[-1]["content"][-1]["text"]
    assert sent.startswith("what is left?\n\n")
    assert f'<file name="{notes}">\n# Trip\n\nLisbon in May.\n</file>' in sent
    assert sent.index("notes.md") < sent.index(f'<file name="{todo}">\nbook the hotel\n</file>')
    stored = db_rows(home, "SELECT content FROM turns WHERE role = 'user'")[0][0]
    assert "Lisbon in May." in stored and "book the hotel" in stored


def test_a_binary_or_missing_attachment_is_a_usage_error_and_nothing_is_sent(
    rheo, fake_model, home, tmp_path
):
    picture = tmp_path / "photo.png"
    picture.write_bytes(b"\x89PNG\x00\x00")
    for bad, says in ((picture, "is not a text file"), (tmp_path / "nope.md", "no such file")):
        result = rheo("ask", "-f", str(bad), "what is this?")
        assert result.exit_code == 2 and says in result.stderr, result.stderr
    assert fake_model.requests == []
    if (home / "rheo.db").exists():
        assert db_rows(home, "SELECT id FROM turns") == []
