"""Structured output (``rheo ask --schema``): a JSON Schema given to the model as
instructions, and the reply read back as JSON and checked against it.

The same on every provider: the schema goes into the turn's extra instructions
(`instructions`), the reply's JSON is found (`reply_json`: the whole reply, or a fenced
```json block in it) and checked (`check`). With the ``jsonschema`` package importable (it
comes with the ``mcp`` extra) the check is the full JSON Schema of the schema's
``$schema`` (2020-12 by default); without it, the practical subset `check_subset` covers:
``type`` (one or a list), ``properties``, ``required``, ``items``, ``enum``, ``const``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import RheoError, UsageError

TYPES = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}
"""JSON Schema's type names and the Python types `json.loads` gives for them."""

_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)\n[ \t]*```", re.DOTALL | re.IGNORECASE)


class ReplyMismatch(RheoError):
    """The reply is not JSON, or its JSON does not match the schema (exit 1; the reply is
    stored as any reply is)."""


def load_schema(given: str) -> dict[str, Any]:
    """The schema ``given`` names: inline JSON (text starting with ``{`` or ``[``) or the path of a
    UTF-8 file holding it. Raises UsageError (exit 2) for a missing or unreadable file, text
    that is not JSON, or JSON that is not a valid schema (`check_schema`)."""
    text = given.strip()
    if not text.startswith(("{", "[")):
        from .attachments import read_text

        text = read_text(Path(given).expanduser(), given)
    try:
        schema: dict[str, Any] = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"--schema is not valid JSON: {exc.msg} (line {exc.lineno})") from None
    check_schema(schema)
    return schema


def check_schema(schema: Any) -> None:
    """Raise UsageError unless ``schema`` is a JSON Schema object: checked by ``jsonschema``
    when importable, else the subset's keywords are checked for their shapes."""
    if not isinstance(schema, dict):
        raise UsageError("--schema must be a JSON object (a JSON Schema)")
    jsonschema = _jsonschema()
    if jsonschema is None:
        _check_subset_schema(schema, "schema")
        return
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "schema"
        raise UsageError(f"--schema is not a valid JSON Schema: {where}: {exc.message}") from None


def _jsonschema() -> Any:
    """The ``jsonschema`` module, or None when it is not installed."""
    import importlib

    try:
        return importlib.import_module("jsonschema")
    except ImportError:
        return None


def _check_subset_schema(schema: dict[str, Any], where: str) -> None:
    kinds = schema.get("type")
    names = kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []
    if any(not isinstance(n, str) or n not in TYPES for n in names):
        raise UsageError(f"--schema: {where}: unknown type {kinds!r}")
    if "enum" in schema and not isinstance(schema["enum"], list):
        raise UsageError(f"--schema: {where}: enum must be a list")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise UsageError(f"--schema: {where}: required must be a list of names")
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise UsageError(f"--schema: {where}: properties must be an object")
    subs = [(f"{where}/properties/{k}", v) for k, v in properties.items()]
    if "items" in schema:
        subs.append((f"{where}/items", schema["items"]))
    for place, sub in subs:
        if not isinstance(sub, dict):
            raise UsageError(f"--schema: {place} must be an object")
        _check_subset_schema(sub, place)


def instructions(schema: dict[str, Any]) -> str:
    """The instructions that ask the model for a reply of JSON only, matching ``schema``."""
    return (
        "Reply with a single JSON value and nothing else: no prose, no Markdown fence. "
        "It must match this JSON Schema:\n" + json.dumps(schema, ensure_ascii=False, indent=2)
    )


def reply_json(reply: str) -> Any:
    """The JSON value of ``reply``: the whole reply, else its first fenced ``json`` block.
    Raises ReplyMismatch when neither is JSON."""
    candidates = [reply.strip(), *(m.group(1) for m in _FENCE.finditer(reply))]
    for text in candidates:
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            continue
    raise ReplyMismatch("the reply is not JSON")


def check(value: Any, schema: dict[str, Any]) -> None:
    """Raise ReplyMismatch (``the reply does not match the schema: WHERE: WHY``) unless
    ``value`` matches ``schema`` (``jsonschema`` when importable, else `check_subset`)."""
    jsonschema = _jsonschema()
    if jsonschema is None:
        problem = check_subset(value, schema)
    else:
        error = jsonschema.exceptions.best_match(
            jsonschema.validators.validator_for(schema)(schema).iter_errors(value)
        )
        problem = None
        if error is not None:
            where = "/".join(["the reply", *(str(p) for p in error.absolute_path)])
            problem = f"{where}: {error.message}"
    if problem is not None:
        raise ReplyMismatch(f"the reply does not match the schema: {problem[:300]}")


def check_subset(value: Any, schema: dict[str, Any], where: str = "the reply") -> str | None:
    """The first way ``value`` fails ``schema``'s ``type``, ``enum``, ``const``,
    ``required``, ``properties`` or ``items`` (``WHERE: WHY``), or None when it matches.
    Other keywords are not checked."""
    kinds = schema.get("type")
    names = kinds if isinstance(kinds, list) else [kinds] if kinds is not None else []
    if names and not any(_is(value, name) for name in names):
        return f"{where}: expected {' or '.join(names)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where}: {json.dumps(value)[:60]} is not one of {json.dumps(schema['enum'])}"
    if "const" in schema and value != schema["const"]:
        return f"{where}: expected {json.dumps(schema['const'])}"
    if isinstance(value, dict):
        for name in schema.get("required", []):
            if name not in value:
                return f"{where}: {name!r} is required"
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                found = check_subset(value[name], sub, f"{where}/{name}")
                if found is not None:
                    return found
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            found = check_subset(item, schema["items"], f"{where}/{i}")
            if found is not None:
                return found
    return None


def _is(value: Any, name: str) -> bool:
    """``value`` is of JSON Schema type ``name`` (booleans are not numbers; 2.0 is an
    integer, as JSON Schema says)."""
    if isinstance(value, bool) and name not in ("boolean",):
        return False
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, TYPES[name])
