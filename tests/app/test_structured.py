"""`app.structured`: finding the reply's JSON, and the schema subset checked without the
jsonschema package."""

from __future__ import annotations

import pytest

from rheo_cli.app import structured
from rheo_cli.app.structured import ReplyMismatch, check_subset, reply_json
from rheo_cli.errors import UsageError

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "size": {"type": "integer"},
        "tags": {"type": "array", "items": {"enum": ["a", "b"]}},
        "ok": {"type": ["boolean", "null"]},
    },
    "required": ["name"],
}


def test_reply_json_takes_the_whole_reply_or_a_fenced_block():
    assert reply_json(' {"a": 1}\n') == {"a": 1}
    assert reply_json("Here:\n```json\n[1, 2]\n```\nDone.") == [1, 2]
    with pytest.raises(ReplyMismatch, match="not JSON"):
        reply_json("no json here")


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"name": "x", "size": 3, "tags": ["a"], "ok": None}, None),
        ({"name": "x", "size": 3.0}, None),
        ({"size": 3}, "the reply: 'name' is required"),
        ({"name": 5}, "the reply/name: expected string"),
        ({"name": "x", "size": True}, "the reply/size: expected integer"),
        ({"name": "x", "size": 2.5}, "the reply/size: expected integer"),
        ({"name": "x", "tags": ["a", "c"]}, 'the reply/tags/1: "c" is not one of ["a", "b"]'),
        ({"name": "x", "ok": 1}, "the reply/ok: expected boolean or null"),
        ([], "the reply: expected object"),
    ],
)
def test_the_subset_checks_type_required_properties_items_and_enum(value, problem):
    assert check_subset(value, SCHEMA) == problem


def test_without_jsonschema_the_subset_checks_schemas_and_replies(monkeypatch):
    monkeypatch.setattr(structured, "_jsonschema", lambda: None)
    assert structured.load_schema('{"type": "object", "required": ["a"]}')["required"] == ["a"]
    for bad, says in (
        ('{"type": "strung"}', "unknown type 'strung'"),
        ('{"properties": {"a": 3}}', "schema/properties/a must be an object"),
        ('{"required": "a"}', "required must be a list"),
        ('{"items": {"type": 1}}', "schema/items: unknown type 1"),
    ):
        with pytest.raises(UsageError, match=says):
            structured.load_schema(bad)
    with pytest.raises(ReplyMismatch, match="the reply/name: expected string"):
        structured.check({"name": 1}, SCHEMA)
    structured.check({"name": "ok"}, SCHEMA)
