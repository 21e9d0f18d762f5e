"""Import: records as `export.export_records` makes them, written in one transaction, so
nothing is half imported; records whose key is already stored are skipped, and keys are
resolved into the local ids of rows stored or imported before them."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..facts.scope import check_assistant
from ..ledger import counters
from ..store import crash
from ..store.db import write
from ..store.errors import InvalidInput
from ..store.profiles import check_profile
from ..store.timeutil import from_stored, to_stored
from .keys import KINDS, Keyed, keys_of


@dataclass
class ImportCounts:
    """Records added per kind, and those already present (skipped)."""

    added: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    present: int = 0


def _need(rec: dict[str, Any], line: int, *names: str) -> None:
    missing = [n for n in names if n not in rec]
    if missing:
        raise InvalidInput(f"line {line}: a {rec.get('type')} record needs {', '.join(missing)}")


def _check_times(rec: dict[str, Any], line: int) -> None:
    """Every time of a record (``ts`` and ``*_at`` fields) must be stored UTC text exactly as
    rheo writes it (``2026-11-20T10:00:00.000Z``): anything else would sort wrongly or break
    every later read of the profile. Raises InvalidInput naming the line and field."""
    for name, value in rec.items():
        if not (name == "ts" or name.endswith("_at")) or value is None:
            continue
        try:
            ok = isinstance(value, str) and to_stored(from_stored(value)) == value
        except (InvalidInput, ValueError, OverflowError):
            ok = False
        if not ok:
            raise InvalidInput(
                f"line {line}: {name} {value!r} is not a UTC time as rheo writes it "
                "(e.g. 2026-11-20T10:00:00.000Z)"
            )


def import_records(
    conn: sqlite3.Connection, records: Iterable[tuple[int, dict[str, Any]]]
) -> ImportCounts:
    """Write ``(line number, record)`` pairs (records as `export_records` makes them) in one
    transaction; records whose key is already stored are skipped. Raises InvalidInput naming
    the line of the first record that is malformed, names a profile no command accepts, or
    refers to a key not seen before; then nothing is written. A session that gains turns has
    its counters (turns, first and last turn's time) recounted from them."""
    counts = ImportCounts()
    keyed: dict[str, Keyed] = {}
    maps: dict[str, dict[str, int]] = {}
    links: list[tuple[int, int, str | None, str | None, str]] = []
    touched: dict[str, set[int]] = {}
    with write(conn):
        for line, rec in records:
            kind = rec.get("type")
            if kind == "header":
                continue
            if kind not in KINDS:
                raise InvalidInput(f"line {line}: unknown record type {kind!r}")
            _need(rec, line, "key", "profile")
            profile, key = rec["profile"], rec["key"]
            if not isinstance(profile, str) or not isinstance(key, str) or not profile:
                raise InvalidInput(f"line {line}: key and profile must be text")
            _check_profile(profile, line)
            if profile not in keyed:
                keyed[profile] = keys_of(conn, profile)
                k = keyed[profile]
                maps[profile] = {
                    v: i
                    for d in (k.sessions, k.turns, k.items, k.events, k.digests)
                    for i, v in d.items()
                }
                for old, row_id in k.legacy.items():
                    maps[profile].setdefault(old, row_id)
            known = maps[profile]
            if key in known:
                counts.present += 1
                continue

            _check_times(rec, line)
            ref = _Refs(known, rec, line)
            try:
                new_id = _insert(conn, kind, rec, line, profile, ref, links)
            except sqlite3.IntegrityError as exc:
                raise InvalidInput(f"line {line}: the {kind} record was refused: {exc}") from None
            except (KeyError, TypeError, ValueError) as exc:
                raise InvalidInput(f"line {line}: malformed {kind} record ({exc})") from None
            known[key] = new_id
            counts.added[kind] += 1
            if kind == "turn":
                touched.setdefault(profile, set()).add(known[rec["session"]])
            crash.reach("import.record")
        for item_id, line, superseded, conflict, profile in links:
            known = maps[profile]
            for column, value in (("superseded_by", superseded), ("conflict_with", conflict)):
                if value is None:
                    continue
                if value not in known:
                    raise InvalidInput(f"line {line}: {column} {value!r} is not in the file")
                conn.execute(
                    f"UPDATE memory_items SET {column} = ? WHERE id = ?", (known[value], item_id)
                )
        # A session already stored that gains turns (a later export of it) counts them.
        for profile, sessions in touched.items():
            counters.recount(conn, sessions, profile)
    return counts


def _check_profile(name: str, line: int) -> None:
    """The rule every command holds profile names to (`check_profile`), naming the line: a
    profile no command accepts could never be viewed or purged."""
    try:
        check_profile(name)
    except InvalidInput as exc:
        raise InvalidInput(f"line {line}: {exc}") from None


class _Refs:
    """Resolves the keys a record refers to into local ids (of rows stored or imported
    before it); an unknown key is an InvalidInput naming the line."""

    def __init__(self, known: dict[str, int], rec: dict[str, Any], line: int) -> None:
        self.known, self.rec, self.line = known, rec, line

    def key(self, value: Any, what: str = "reference") -> int:
        if not isinstance(value, str) or value not in self.known:
            raise InvalidInput(f"line {self.line}: {what} {value!r} is not a record before it")
        return self.known[value]

    def __call__(self, name: str, required: bool = True) -> int | None:
        value = self.rec.get(name)
        if value is None and not required:
            return None
        return self.key(value, name)


def _insert(
    conn: sqlite3.Connection,
    kind: str,
    rec: dict[str, Any],
    line: int,
    profile: str,
    ref: _Refs,
    links: list[tuple[int, int, str | None, str | None, str]],
) -> int:
    cur: sqlite3.Cursor
    if kind == "session":
        _need(rec, line, "started_at", "last_turn_at", "turns")
        cur = conn.execute(
            "INSERT INTO sessions(profile, started_at, last_turn_at, turns) VALUES (?, ?, ?, ?)",
            (profile, rec["started_at"], rec["last_turn_at"], int(rec["turns"])),
        )
    elif kind == "turn":
        _need(rec, line, "session", "role", "content", "ts")
        meta = dict(rec.get("meta") or {})
        if "reply_to" in meta and meta["reply_to"] is not None:
            meta["reply_to"] = ref.key(meta["reply_to"], "reply_to")
        usage = rec.get("usage") or {}
        cur = conn.execute(
            "INSERT INTO turns(profile, session_id, role, content, ts, model, status, "
            "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, meta, "
            "source_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                profile, ref("session"), rec["role"], str(rec["content"]), rec["ts"],
                rec.get("model"), rec.get("status"), usage.get("input_tokens"),
                usage.get("output_tokens"), usage.get("cache_read_tokens"),
                usage.get("cache_write_tokens"), json.dumps(meta, ensure_ascii=False),
                rec.get("source_key"),
            ),
        )  # fmt: skip
    elif kind == "digest":
        _need(rec, line, "session", "started_at", "ended_at", "narrative", "created_at")
        facts = [dict(f) if isinstance(f, dict) else f for f in rec.get("facts") or []]
        for fact in facts:
            if isinstance(fact, dict) and fact.get("turn_id") is not None:
                fact["turn_id"] = ref.key(fact["turn_id"], "turn_id")
        turn_ids = [ref.key(t, "source turn") for t in rec.get("source_turns") or [] if t]
        cur = conn.execute(
            "INSERT INTO digests(profile, session_id, started_at, ended_at, narrative, facts, "
            "procedures, decisions, source_turn_ids, model, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                profile, ref("session"), rec["started_at"], rec["ended_at"], rec["narrative"],
                json.dumps(facts, ensure_ascii=False),
                json.dumps(rec.get("procedures") or [], ensure_ascii=False),
                json.dumps(rec.get("decisions") or [], ensure_ascii=False),
                json.dumps(turn_ids), rec.get("model"), rec["created_at"],
            ),
        )  # fmt: skip
    elif kind == "memory_item":
        _need(rec, line, "category", "topic", "label", "content_key", "confidence", "source",
              "created_at", "reinforced_at", "status")  # fmt: skip
        assistant = rec.get("assistant")  # absent (files before it, shared facts): shared
        if assistant is not None:
            try:
                check_assistant(assistant)
            except InvalidInput as exc:
                raise InvalidInput(f"line {line}: {exc}") from None
        cur = conn.execute(
            "INSERT INTO memory_items(profile, category, topic, label, properties, content_key, "
            "confidence, reinforcements, pinned, reason, source, source_turn_id, created_at, "
            "reinforced_at, status, due_at, assistant) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                profile, rec["category"], rec["topic"], rec["label"],
                json.dumps(rec.get("properties") or {}, ensure_ascii=False), rec["content_key"],
                float(rec["confidence"]), int(rec.get("reinforcements", 1)),
                1 if rec.get("pinned") else 0, rec.get("reason", ""), rec["source"],
                ref("source_turn", required=False), rec["created_at"], rec["reinforced_at"],
                rec["status"], rec.get("due_at"), assistant,
            ),
        )  # fmt: skip
        assert cur.lastrowid is not None
        links.append(
            (cur.lastrowid, line, rec.get("superseded_by"), rec.get("conflict_with"), profile)
        )
    else:
        _need(rec, line, "item", "ts", "kind", "cause")
        cur = conn.execute(
            "INSERT INTO memory_events(item_id, profile, ts, kind, cause, related_item_id, "
            "source_turn_id, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                ref("item"), profile, rec["ts"], rec["kind"], rec["cause"],
                ref("related_item", required=False), ref("source_turn", required=False),
                json.dumps(rec.get("data") or {}, ensure_ascii=False),
            ),
        )  # fmt: skip
    assert cur.lastrowid is not None
    return int(cur.lastrowid)
