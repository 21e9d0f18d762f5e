"""Reading facts out of a small model's reply: repaired when possible, dropped with a reason.

Extractors and digest writers are asked for JSON, and mostly return it; this module copes with
what they return instead: code fences, prose around the JSON, invalid escapes, trailing commas,
smart quotes, Python literals, single quotes, a bare list or a single object, missing or
renamed keys, unknown categories, ids that don't exist, too many facts, the wrong language.
Every repair and every drop is recorded as a note, so a job's log says what happened.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from typing import Any

from .. import due as due_rule
from .. import windows
from ..store.errors import InvalidInput
from ..text import language
from ..text.safety import clean
from .equivalence import topic_key
from .fact import LABEL_MAX, Fact
from .items import CATEGORIES
from .scope import read_scope

MAX_FACTS = 3
"""Seed 2: the extractor returns 0-3 facts per exchange."""
MAX_REPLY_CHARS = 100_000
MAX_STARTS = 50
MAX_PROPERTIES_CHARS = 2_000

_FENCE = re.compile(r"```[a-zA-Z0-9_-]*\s*\n?(.*?)```", re.S)
_CATEGORY_ALIASES = {
    "goals": "goal",
    "blockers": "blocker",
    "preferences": "preference",
    "pref": "preference",
    "operation": "operations",
    "ops": "operations",
    "people": "team",
    "person": "team",
    "relationship": "team",
    "wins": "win",
    "achievement": "win",
    "milestone": "win",
    "open_items": "open_item",
    "open item": "open_item",
    "open-item": "open_item",
    "commitment": "open_item",
    "todo": "open_item",
    "task": "open_item",
    "deadline": "open_item",
    "decision": "strategy",
    "plan": "strategy",
    "facts": "fact",
    "other": "fact",
}


_RELATION_ALIASES = {
    "same": "same",
    "repeat": "same",
    "repeats": "same",
    "reinforce": "same",
    "reinforces": "same",
    "unchanged": "same",
    "update": "update",
    "updates": "update",
    "updated": "update",
    "change": "update",
    "changed": "update",
    "supersede": "update",
    "supersedes": "update",
    "replace": "update",
    "replaces": "update",
    "correction": "update",
    "done": "done",
    "fulfilled": "done",
    "completed": "done",
    "complete": "done",
    "cancelled": "done",
    "canceled": "done",
    "closed": "done",
    "new": "new",
}


@dataclass(frozen=True)
class Candidate:
    """A validated fact plus what the writer linked it to: an existing item id and how it
    relates to it (``relation``: same, update or done; None for a new fact or when the writer
    did not say) and, for digests, the turn it came from. ``scope`` is what the writer said:
    ``shared``, ``assistant`` (the conversation's assistant; rheo decides which) or None."""

    fact: Fact
    existing_id: int | None = None
    turn_id: int | None = None
    relation: str | None = None
    scope: str | None = None


@dataclass
class Parsed:
    """Result of parsing: the data found (dict), the facts kept, notes on every repair and
    drop, and ``unreadable``: why the reply as a whole could not be read (no JSON, JSON of
    another shape, no list of facts in it), None when it could — an empty list of facts is a
    reply like any other."""

    data: dict[str, Any] = field(default_factory=dict)
    facts: list[Candidate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unreadable: str | None = None


def _balanced(text: str, start: int) -> str | None:
    """The JSON value that starts at ``text[start]`` (``{`` or ``[``), by bracket matching."""
    stack: list[str] = []
    in_string: str | None = None
    escaped = False
    for i in range(start, len(text)):
        ch = text[i]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == in_string:
                in_string = None
            continue
        if ch in "\"'" and (ch == '"' or stack):
            in_string = ch
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]":
            if not stack or stack.pop() != ch:
                return None
            if not stack:
                return text[start : i + 1]
    return None


def _loads(candidate: str, notes: list[str]) -> Any:
    try:
        return json.loads(candidate)
    except ValueError:
        pass
    repaired = candidate
    steps: list[tuple[str, Callable[[str], str]]] = [
        ("smart quotes", lambda t: t.replace("“", '"').replace("”", '"').replace("’", "'")),
        ("invalid escapes", lambda t: re.sub(r'\\(?!["\\/bfnrtu])', r"\\\\", t)),
        ("trailing commas", lambda t: re.sub(r",\s*([}\]])", r"\1", t)),
        ("raw newlines in strings", _escape_newlines_in_strings),
    ]
    for name, step in steps:
        fixed = step(repaired)
        if fixed != repaired:
            repaired = fixed
            try:
                value = json.loads(repaired)
            except ValueError:
                continue
            notes.append(f"repaired JSON ({name})")
            return value
    try:
        value = ast.literal_eval(
            re.sub(
                r"\btrue\b",
                "True",
                re.sub(r"\bfalse\b", "False", re.sub(r"\bnull\b", "None", repaired)),
            )
        )
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise ValueError("not valid JSON") from None
    notes.append("repaired JSON (Python-style literal)")
    return value


def _escape_newlines_in_strings(text: str) -> str:
    out = []
    in_string = False
    escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            elif ch == "\n":
                out.append("\\n")
                continue
        elif ch == '"':
            in_string = True
        out.append(ch)
    return "".join(out)


def find_json(text: str, notes: list[str]) -> Any:
    """The first JSON object or array in ``text`` (inside a code fence if there is one).

    Raises ValueError when none can be read. Only the first `MAX_REPLY_CHARS` characters
    and `MAX_STARTS` opening brackets are tried, so junk output cannot stall a worker."""
    body = text.strip()[:MAX_REPLY_CHARS]
    fence = _FENCE.search(body)
    if fence:
        notes.append("removed a code fence")
        body = fence.group(1).strip()
    starts = [i for i, ch in enumerate(body) if ch in "{["][:MAX_STARTS]
    for i in starts:
        chunk = _balanced(body, i)
        if chunk is None:
            continue
        try:
            value = _loads(chunk, notes)
        except (ValueError, RecursionError, MemoryError):
            continue
        if i > 0 or len(chunk) < len(body):
            notes.append("ignored text around the JSON")
        return value
    raise ValueError("no JSON object or array found")


def _text(value: Any) -> str:
    if isinstance(value, str):
        return " ".join(clean(value).split())
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return ""


def _category(raw: Any, notes: list[str], n: int) -> str:
    name = _text(raw).casefold().strip()
    if name in CATEGORIES:
        return name
    alias = _CATEGORY_ALIASES.get(name) or _CATEGORY_ALIASES.get(name.replace(" ", "_"))
    if alias:
        notes.append(f"fact {n}: category {raw!r} read as {alias!r}")
        return alias
    if name:
        notes.append(f"fact {n}: unknown category {raw!r}, filed as 'fact'")
    else:
        notes.append(f"fact {n}: no category, filed as 'fact'")
    return "fact"


def _confidence(raw: Any, notes: list[str], n: int) -> float | None:
    if raw is None:
        return None
    value: float | None = None
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        value = float(raw)
    elif isinstance(raw, str):
        try:
            value = float(raw.strip().rstrip("%")) / (100 if raw.strip().endswith("%") else 1)
        except ValueError:
            value = None
    if value is None or value != value:  # NaN
        notes.append(f"fact {n}: confidence {raw!r} is not a number; default used")
        return None
    if value > 1.0 and value <= 100.0:
        notes.append(f"fact {n}: confidence {raw!r} read as a percentage")
        value = value / 100.0
    if not 0.0 <= value <= 1.0:
        notes.append(f"fact {n}: confidence {raw!r} out of range; clamped")
        value = min(1.0, max(0.0, value))
    return value


def _due(raw: Any, notes: list[str], n: int, now: datetime) -> str | None:
    """A fact's deadline as stored UTC text, by the one due-date rule (`memory.due`), read
    against ``now``; None (with a note) when it is no date."""
    text = _text(raw)
    if not text:
        return None
    try:
        return due_rule.stored(text, now)
    except InvalidInput:
        notes.append(f"fact {n}: due date {raw!r} is not a usable date; ignored")
        return None


def _window(
    raw: dict[str, Any], notes: list[str], n: int, now: datetime
) -> tuple[str | None, str | None]:
    """A fact's validity window as the writer gave it (``valid_from`` / ``valid_until``: an
    ISO 8601 date or date-time, or a day in words), as stored UTC text read against ``now``;
    a bound that is no date is dropped with a note, and so is a window ending before it
    starts."""
    bounds: list[str | None] = []
    for name, end in (("valid_from", False), ("valid_until", True)):
        try:
            bounds.append(windows.read(raw.get(name), now, end=end))
        except (InvalidInput, OverflowError, ValueError):
            notes.append(f"fact {n}: {name} {_text(raw.get(name))[:40]!r} is not a date; ignored")
            bounds.append(None)
    try:
        windows.check(bounds[0], bounds[1])
    except InvalidInput:
        notes.append(f"fact {n}: its window ends before it starts; ignored")
        return None, None
    return bounds[0], bounds[1]


def read_fact(
    raw: Any,
    n: int,
    notes: list[str],
    *,
    known_ids: dict[int, str],
    turn_ids: set[int] | None,
    person_text: str,
    tz: tzinfo = UTC,
    now: datetime | None = None,
) -> Candidate | None:
    """Validate one fact object (fact number ``n`` for notes); None when it must be dropped.

    A due date is read by the one due-date rule (`memory.due`) against ``now`` (the time the
    fact was said, in the person's zone; None: the current time in ``tz``), so "friday" and
    "2026-12-04" both work and a date alone is the end of that day there.

    Aliases are accepted (``content`` as the Rheo article's ``{label, properties}`` (§05),
    ``fact``/``text``
    for the label, ``type`` for the category, ``id``/``reinforces``/``supersedes`` for an
    existing item, ``verdict`` for ``relation``); fields rheo decides itself (profile,
    status, pinned...) are ignored. A relation other than new needs a known id.
    """
    if isinstance(raw, str) and raw.strip():
        notes.append(f"fact {n}: a bare string, read as its label")
        raw = {"label": raw}
    if not isinstance(raw, dict):
        notes.append(f"fact {n}: dropped, not an object")
        return None
    label, raw_properties = _label_and_properties(raw, notes, n)
    if not label:
        return None
    properties = _properties(raw_properties, notes, n)
    mismatch = language.mismatch(person_text, label) if person_text else None
    if mismatch:
        notes.append(f"fact {n}: dropped, {mismatch}")
        return None
    existing_id, relation = _existing(raw, notes, n, known_ids)
    topic = _topic(raw, notes, n, label, existing_id, known_ids)
    turn_id = _turn_id(raw, notes, n, turn_ids)
    scope = read_scope(raw.get("scope"))
    if raw.get("scope") is not None and scope is None:
        notes.append(f"fact {n}: scope {_text(raw.get('scope'))[:40]!r} read as shared")
    ignored = sorted(set(raw) & _RHEO_DECIDES)
    if ignored:
        notes.append(f"fact {n}: ignored {', '.join(ignored)} (rheo decides these)")
    moment = now if now is not None else datetime.now(tz)
    valid_from, valid_until = _window(raw, notes, n, moment)
    fact = Fact(
        category=_category(raw.get("category", raw.get("type")), notes, n),
        topic=topic,
        label=label,
        properties=properties,
        confidence=_confidence(raw.get("confidence"), notes, n),
        reason=_text(raw.get("reason")),
        due_at=_due(
            raw.get("due") or raw.get("due_at") or raw.get("deadline"),
            notes,
            n,
            moment,
        ),
        valid_from=valid_from,
        valid_until=valid_until,
    )
    return Candidate(
        fact=fact, existing_id=existing_id, turn_id=turn_id, relation=relation, scope=scope
    )


_RHEO_DECIDES = {
    "profile",
    "owner",
    "user",
    "source_turn_id",
    "status",
    "pinned",
    "created_at",
    "assistant",
    "agent",
}
"""Fields of a fact object that rheo sets itself: a writer's values for them are ignored."""


def _label_and_properties(raw: dict[str, Any], notes: list[str], n: int) -> tuple[str, Any]:
    """The fact's label (cut to `LABEL_MAX` characters; "" with a note when it has none) and
    its properties as the writer gave them (not yet checked), from ``label``/``properties``,
    a ``content`` object or text, or a label alias (``fact``, ``text``...)."""
    content = raw.get("content")
    label = _text(raw.get("label"))
    properties = raw.get("properties")
    if isinstance(content, dict):
        label = label or _text(content.get("label"))
        properties = properties if properties is not None else content.get("properties")
    elif content is not None and not label:
        label = _text(content)
    for alias in ("fact", "text", "value", "summary", "statement"):
        if not label and alias in raw:
            label = _text(raw.get(alias))
            if label:
                notes.append(f"fact {n}: label taken from {alias!r}")
    if not label:
        notes.append(f"fact {n}: dropped, no content")
        return "", properties
    if len(label) > LABEL_MAX:
        notes.append(f"fact {n}: label cut to {LABEL_MAX} characters")
        label = label[:LABEL_MAX]
    return label, properties


def _properties(given: Any, notes: list[str], n: int) -> dict[str, Any]:
    """The fact's properties (``given``: as the writer gave them) as safe JSON (`_plain`),
    keys cleaned and empty values left out; {} (with a note) when they are no object or
    longer than `MAX_PROPERTIES_CHARS` characters as JSON."""
    if given is None:
        given = {}
    if not isinstance(given, dict):
        notes.append(f"fact {n}: properties were not an object; dropped them")
        given = {}
    properties: dict[str, Any] = {
        clean(str(k)): _plain(v) for k, v in given.items() if v is not None and str(k).strip()
    }
    if len(json.dumps(properties, ensure_ascii=False)) > MAX_PROPERTIES_CHARS:
        notes.append(
            f"fact {n}: properties longer than {MAX_PROPERTIES_CHARS} characters; dropped them"
        )
        properties = {}
    return properties


def _existing(
    raw: dict[str, Any], notes: list[str], n: int, known_ids: dict[int, str]
) -> tuple[int | None, str | None]:
    """The known item the fact refers to (the first id field given, when it is in
    ``known_ids``) and its relation to it: same, update or done; None for a new fact, or one
    whose relation needs an id it lacks."""
    existing_id: int | None = None
    relation = _relation(raw, notes, n)
    for key in ("existing_id", "id", "item_id", "reinforces", "supersedes", "updates"):
        if raw.get(key) is None:
            continue
        try:
            ref = int(raw[key])
        except (TypeError, ValueError):
            notes.append(f"fact {n}: {key} {raw[key]!r} is not an id; ignored")
            continue
        if ref in known_ids:
            existing_id = ref
            if relation is None and key in ("reinforces", "supersedes", "updates"):
                relation = _RELATION_ALIASES[key]
        else:
            notes.append(f"fact {n}: unknown id {ref} ignored")
        break
    if relation == "new" or (relation is not None and existing_id is None):
        if relation != "new":
            notes.append(f"fact {n}: {relation!r} without a known id; read as new")
        relation = None
    return existing_id, relation


def _topic(
    raw: dict[str, Any],
    notes: list[str],
    n: int,
    label: str,
    existing_id: int | None,
    known_ids: dict[int, str],
) -> str:
    """The fact's topic key: the known item's when it refers to one, else the writer's
    ``topic`` (or ``key``), else one derived from ``label`` (at most 40 characters)."""
    topic = topic_key(_text(raw.get("topic") or raw.get("key") or ""))
    if existing_id is not None:
        if topic and topic != known_ids[existing_id]:
            notes.append(f"fact {n}: topic set to that of #{existing_id}")
        topic = known_ids[existing_id]
    if not topic:
        topic = topic_key(label)[:40].strip("-")
        notes.append(f"fact {n}: no topic, derived {topic!r} from the label")
    return topic


def _turn_id(
    raw: dict[str, Any], notes: list[str], n: int, turn_ids: set[int] | None
) -> int | None:
    """The turn a digest's fact cites, when it is one of ``turn_ids`` (None: the writer may
    cite none)."""
    if turn_ids is None or raw.get("turn_id") is None:
        return None
    try:
        tid = int(raw["turn_id"])
    except (TypeError, ValueError):
        tid = -1
    if tid in turn_ids:
        return tid
    notes.append(f"fact {n}: turn id {raw['turn_id']!r} is not in this session; ignored")
    return None


def _relation(raw: dict[str, Any], notes: list[str], n: int) -> str | None:
    """The fact's relation to a known fact (same, update, done, new), or None if unsaid."""
    value = raw.get("relation", raw.get("verdict"))
    if value is None:
        return None
    name = _text(value).casefold().strip()
    relation = _RELATION_ALIASES.get(name)
    if relation is None:
        notes.append(f"fact {n}: unknown relation {value!r}; compared by rheo's own rule")
    return relation


def _plain(value: Any) -> Any:
    """A property value as safe JSON: clean strings, finite numbers, nested the same way."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {clean(str(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def parse_facts(
    text: str,
    *,
    known_ids: dict[int, str] | None = None,
    turn_ids: set[int] | None = None,
    person_text: str = "",
    key: str = "facts",
    limit: int = MAX_FACTS,
    tz: tzinfo = UTC,
    now: datetime | None = None,
) -> Parsed:
    """Read up to ``limit`` facts from a model reply.

    ``known_ids`` maps the existing item ids the model was shown to their topics; references
    to others are dropped. ``turn_ids`` are the turns a digest fact may cite. ``person_text``
    is what the person said, for the language check; due dates are read against ``now`` (else
    the current time in ``tz``: `read_fact`). The facts are under ``key`` in a JSON object (or
    the reply is a bare list). Never raises: unreadable output gives no facts, a note and
    ``unreadable`` (the caller decides whether that fails its job).
    """
    parsed = Parsed()
    notes = parsed.notes
    if not text.strip():
        parsed.unreadable = "the reply was empty"
        notes.append(f"dropped the reply: {parsed.unreadable}")
        return parsed
    try:
        value = find_json(text, notes)
    except ValueError as exc:
        parsed.unreadable = str(exc)
        notes.append(f"dropped the reply: {exc}")
        return parsed
    if isinstance(value, list):
        raw_facts: Any = value
    elif isinstance(value, dict):
        parsed.data = value
        if key in value:
            raw_facts = value[key]
        elif any(k in value for k in ("label", "content", "fact", "topic")):
            notes.append("a single fact object, not a list")
            raw_facts = [value]
        else:
            raw_facts = []
            for alt in ("memories", "items", "candidate_facts", "results"):
                if isinstance(value.get(alt), list):
                    notes.append(f"facts found under {alt!r}")
                    raw_facts = value[alt]
                    break
            else:
                parsed.unreadable = f"no {key!r} in the reply"
    else:
        parsed.unreadable = "JSON is neither an object nor a list"
        notes.append(f"dropped the reply: {parsed.unreadable}")
        return parsed
    if raw_facts is None:
        raw_facts = []
    if not isinstance(raw_facts, list):
        parsed.unreadable = f"{key!r} is not a list"
        notes.append(f"{key!r} is not a list; dropped")
        return parsed
    if len(raw_facts) > limit:
        notes.append(f"{len(raw_facts)} facts returned, kept the first {limit}")
        raw_facts = raw_facts[:limit]
    for n, raw in enumerate(raw_facts, 1):
        candidate = read_fact(
            raw,
            n,
            notes,
            known_ids=known_ids or {},
            turn_ids=turn_ids,
            person_text=person_text,
            tz=tz,
            now=now,
        )
        if candidate is not None:
            parsed.facts.append(candidate)
    return parsed
