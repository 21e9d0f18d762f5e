"""``rheo ask --schema``: the schema reaches the model, the reply's JSON is checked and
printed; a bad schema is a usage error, a reply that does not match exits 1 (still stored)."""

from __future__ import annotations

import json

from helpers import db_rows

ITEMS = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "string"}}},
    "required": ["items"],
}


def test_inline_schema_reaches_the_model_and_the_json_is_printed(rheo, fake_model, home):
    fake_model.add('```json\n{"items": ["call Ana", "book the hotel"]}\n```')
    result = rheo("ask", "--schema", json.dumps(ITEMS), "-s", "be brief", "my open items")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"items": ["call Ana", "book the hotel"]}
    system = json.dumps([block.text for block in fake_model.last.system])
    assert "be brief" in system and "must match this JSON Schema" in system
    assert "required" in system and "call Ana" not in system
    stored = db_rows(home, "SELECT content FROM turns WHERE role = 'assistant'")
    assert stored[0][0].startswith("```json")


def test_schema_from_a_file(rheo, fake_model, home, tmp_path):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps({"type": "integer", "enum": [1, 2, 3]}))
    fake_model.add("2")
    result = rheo("ask", "--schema", str(path), "pick one")
    assert (result.exit_code, result.stdout) == (0, "2\n")


def test_a_reply_that_does_not_match_exits_1_and_is_stored(rheo, fake_model, home):
    fake_model.add('{"items": ["ok", 3]}', "Sure! Here they are.")
    result = rheo("ask", "--schema", json.dumps(ITEMS), "my open items")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr == (
        "rheo: the reply does not match the schema: the reply/items/1: 3 is not of type "
        "'string'; the reply is stored as turn #2\n"
    )
    result = rheo("ask", "--schema", json.dumps(ITEMS), "again")
    assert result.exit_code == 1
    assert result.stderr == "rheo: the reply is not JSON; the reply is stored as turn #4\n"
    stored = db_rows(home, "SELECT content FROM turns WHERE role = 'assistant' ORDER BY id")
    assert [r[0] for r in stored] == ['{"items": ["ok", 3]}', "Sure! Here they are."]


def test_a_bad_schema_is_a_usage_error_and_nothing_is_sent(rheo, fake_model, home, tmp_path):
    for given, says in (
        ('{"type": ', "--schema is not valid JSON"),
        ('{"type": "strung"}', "--schema is not a valid JSON Schema"),
        ("[1, 2]", "--schema must be a JSON object"),
        (str(tmp_path / "missing.json"), "no such file"),
    ):
        result = rheo("ask", "--schema", given, "hi")
        assert result.exit_code == 2, (given, result.stderr)
        assert says in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
    result = rheo("ask", "--schema", "{}", "--json", "hi")
    assert result.exit_code == 2 and "without --json" in result.stderr
    assert fake_model.requests == []
