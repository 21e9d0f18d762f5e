"""The shapes the extractor and the digest writer answer in: tools they are made to call
(structured output, see `providers.base.ChatRequest.tool_choice`). A reply in plain text in the
same shape is read too, with repairs (`memory.facts.parsing`)."""

from __future__ import annotations

from typing import Any

from ..memory.facts.items import CATEGORIES
from ..memory.facts.parsing import MAX_FACTS
from ..memory.facts.remember import RELATIONS
from ..memory.facts.scope import SCOPES
from ..providers.base import ToolSpec

_FACT: dict[str, Any] = {
    "category": {"type": "string", "enum": list(CATEGORIES)},
    "topic": {"type": "string", "description": "Short key, 1-4 words: 'arowyn school'."},
    "label": {"type": "string", "description": "The fact, one short sentence."},
    "properties": {"type": "object", "description": "Details as key/value pairs."},
    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    "reason": {"type": "string"},
    "valid_from": {
        "type": ["string", "null"],
        "description": "When the fact starts to hold, if later than now (ISO 8601 date).",
    },
    "valid_until": {
        "type": ["string", "null"],
        "description": (
            "When the fact stops holding, for a fact true only for a while ('in Paris until "
            "Friday', 'for the summer'): ISO 8601 date; null for lasting facts."
        ),
    },
    "scope": {
        "type": "string",
        "enum": list(SCOPES),
        "description": (
            "With a named assistant: shared (about the person or company, for every "
            "assistant) or assistant (only about that assistant's work). Else shared."
        ),
    },
}

RECORD_FACTS = ToolSpec(
    name="record_facts",
    description=(
        "Record the durable facts the person stated in this exchange (0 to 3), each marked "
        "against the known facts: new, same (a repeat of existing_id), update (replaces "
        "existing_id) or done (open item existing_id fulfilled or cancelled)."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "maxItems": MAX_FACTS,
                "items": {
                    "type": "object",
                    "properties": {
                        "relation": {"type": "string", "enum": list(RELATIONS)},
                        "existing_id": {
                            "type": ["integer", "null"],
                            "description": "Id of the known fact for same, update or done.",
                        },
                        **_FACT,
                        "due": {
                            "type": ["string", "null"],
                            "description": "ISO 8601 deadline, for open items.",
                        },
                    },
                    "required": ["relation", "category", "topic", "label"],
                },
            }
        },
        "required": ["facts"],
    },
)

RECORD_DIGEST = ToolSpec(
    name="record_digest",
    description="Record the summary of the finished session.",
    input_schema={
        "type": "object",
        "properties": {
            "narrative": {"type": "string"},
            "facts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {**_FACT, "turn_id": {"type": "integer"}},
                    "required": ["category", "topic", "label"],
                },
            },
            "procedures": {"type": "array", "items": {"type": "string"}},
            "decisions": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["narrative", "facts", "procedures", "decisions"],
    },
)

RECORD_CONSOLIDATION = ToolSpec(
    name="record_consolidation",
    description=(
        "Record the facts to merge (duplicate: drop says nothing keep does not) and the facts "
        "a later one made stale, by id; an empty list when nothing needs doing."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "actions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "action": {"type": "string", "enum": ["duplicate", "stale"]},
                        "keep": {"type": "integer", "description": "Id of the fact kept."},
                        "drop": {
                            "type": "array",
                            "items": {"type": "integer"},
                            "description": "Ids of the facts it replaces.",
                        },
                        "reason": {"type": "string"},
                    },
                    "required": ["action", "keep", "drop"],
                },
            }
        },
        "required": ["actions"],
    },
)
