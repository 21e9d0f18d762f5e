"""Backups, and rheo's own export records: everything of a profile as plain dicts, and back.

`backup` copies the live database through SQLite's online backup API: a consistent snapshot
even while another process writes (WAL readers never block writers).

`export_records` yields records in an order where everything a record refers to comes first:
sessions, turns, digests, memory items, memory events. Records carry no local row ids; they
refer to each other by stable keys computed from their content (a turn's key is a hash of its
profile, time, role, text, model and status; a session's is its first turn's), so importing a
file twice, or into a store that already holds some of it, adds only what is missing, and a
re-export of an imported store is identical to the file it came from. `import_records` writes
a whole file in one transaction: nothing is half imported.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..store import crash
from ..store.db import write
from ..store.errors import InvalidInput, StoreError
from ..store.private_file import new_private_file
from ..store.timeutil import from_stored, to_stored

FORMAT = "rheo-export"
VERSION = 1
KINDS = ("session", "turn", "digest", "memory_item", "memory_event")


def backup(conn: sqlite3.Connection, dest: str | os.PathLike[str]) -> int:
    """Copy the database to ``dest`` (a new file, mode 0600, its folder created 0700) with the
    online backup API; returns the size in bytes. The copy is a single file (rollback
    journal, no -wal) and passes ``PRAGMA integrity_check``. It is written beside ``dest``
    and takes that name only once complete (`private_file`): ``dest`` never exists
    half-written.

    Raises StoreError when ``dest`` exists or cannot be written, or the copy is not sound.
    """
    path = Path(dest)
    if path.exists():
        raise StoreError(f"{path} already exists: choose a new file for the backup")
    with new_private_file(path) as partial:
        try:
            target = sqlite3.connect(partial, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write the backup {path}: {exc}") from exc
        try:
            # One step: the whole copy reads one snapshot, so writers elsewhere never restart it.
            conn.backup(target, pages=-1)
            crash.reach("backup.copy")
            target.execute("PRAGMA journal_mode = DELETE")
            verdict = target.execute("PRAGMA integrity_check").fetchone()[0]
            if verdict != "ok":
                raise StoreError(f"the backup {path} failed its integrity check: {verdict}")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write the backup {path}: {exc}") from exc
        finally:
            target.close()
    return path.stat().st_size


# --- keys --------------------------------------------------------------------------------


def _hash(*parts: Any) -> str:
    blob = json.dumps(parts, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("ascii")).hexdigest()[:24]


class _Keys:
    """Content keys for rows in id order; a repeated key gets ``~2``, ``~3``... suffixes."""

    def __init__(self) -> None:
        self.by_id: dict[int, str] = {}
        self._seen: dict[str, int] = {}

    def add(self, row_id: int, base: str) -> str:
        n = self._seen.get(base, 0) + 1
        self._seen[base] = n
        key = base if n == 1 else f"{base}~{n}"
        self.by_id[row_id] = key
        return key


@dataclass
class _Keyed:
    """Keys of one profile's rows: id -> key per kind."""

    sessions: dict[int, str] = field(default_factory=dict)
    turns: dict[int, str] = field(default_factory=dict)
    items: dict[int, str] = field(default_factory=dict)
    events: dict[int, str] = field(default_factory=dict)
    digests: dict[int, str] = field(default_factory=dict)
    legacy: dict[str, int] = field(default_factory=dict)
    """Item and event keys as rheo computed them before JSON was canonical (from the stored
    text) -> id, so files exported then are still recognised."""


def _canonical(text: str | None) -> str:
    """JSON text with its keys sorted, as an import writes it: a key never depends on the
    order the engine wrote the keys in (the file itself holds them sorted)."""
    try:
        return json.dumps(json.loads(text or "{}"), ensure_ascii=False, sort_keys=True)
    except ValueError:
        return text or ""


def _turn_base(r: sqlite3.Row) -> str:
    return "t" + _hash(r["profile"], r["ts"], r["role"], r["content"], r["model"], r["status"])


def _item_base(r: sqlite3.Row, *, legacy: bool = False) -> str:
    properties = r["properties"] if legacy else _canonical(r["properties"])
    return "m" + _hash(
        r["profile"], r["category"], r["topic"], r["label"], properties, r["created_at"],
        r["source"],
    )  # fmt: skip


def _event_base(item_key: str, r: sqlite3.Row, *, legacy: bool = False) -> str:
    data = r["data"] if legacy else _canonical(r["data"])
    return "e" + _hash(item_key, r["ts"], r["kind"], r["cause"], data)


def _keys(conn: sqlite3.Connection, profile: str) -> _Keyed:
    keyed = _Keyed()
    turns = _Keys()
    first_turn: dict[int, str] = {}
    for r in conn.execute(
        "SELECT id, profile, session_id, ts, role, content, model, status FROM turns "
        "WHERE profile = ? ORDER BY id",
        (profile,),
    ):
        key = turns.add(r["id"], _turn_base(r))
        first_turn.setdefault(r["session_id"], key)
    keyed.turns = turns.by_id
    sessions = _Keys()
    for r in conn.execute(
        "SELECT id, started_at FROM sessions WHERE profile = ? ORDER BY id", (profile,)
    ):
        base = first_turn.get(r["id"]) or ("x" + _hash(profile, r["started_at"]))
        sessions.add(r["id"], "s" + base[1:])
    keyed.sessions = sessions.by_id
    keyed.digests = {
        r["id"]: "d" + keyed.sessions[r["session_id"]][1:]
        for r in conn.execute(
            "SELECT id, session_id FROM digests WHERE profile = ? ORDER BY id", (profile,)
        )
    }
    items, old_items = _Keys(), _Keys()
    for r in conn.execute("SELECT * FROM memory_items WHERE profile = ? ORDER BY id", (profile,)):
        items.add(r["id"], _item_base(r))
        old_items.add(r["id"], _item_base(r, legacy=True))
    keyed.items = items.by_id
    events, old_events = _Keys(), _Keys()
    for r in conn.execute(
        "SELECT id, item_id, ts, kind, cause, data FROM memory_events WHERE profile = ? "
        "ORDER BY id",
        (profile,),
    ):
        events.add(r["id"], _event_base(keyed.items[r["item_id"]], r))
        old_events.add(r["id"], _event_base(old_items.by_id[r["item_id"]], r, legacy=True))
    keyed.events = events.by_id
    keyed.legacy = {k: i for d in (old_items.by_id, old_events.by_id) for i, k in d.items()}
    return keyed


# --- export ------------------------------------------------------------------------------


def profiles(conn: sqlite3.Connection) -> list[str]:
    """Every profile with something stored, sorted."""
    rows = conn.execute(
        "SELECT profile FROM sessions UNION SELECT profile FROM memory_items ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]


def header(names: list[str]) -> dict[str, Any]:
    """The first record of an export: format name, version, the profiles it holds."""
    return {"type": "header", "format": FORMAT, "version": VERSION, "profiles": names}


def export_records(conn: sqlite3.Connection, names: list[str]) -> Iterator[dict[str, Any]]:
    """The header, then every record of the profiles ``names`` (see the module docstring).

    Reads one snapshot: the caller should hold a read transaction (`snapshot`) so that
    writes by another process do not mix into the export."""
    yield header(names)
    for profile in names:
        yield from _export_profile(conn, profile)


def _ref(keys: dict[int, str], value: int | None) -> str | None:
    return keys.get(value) if value is not None else None


def _export_profile(conn: sqlite3.Connection, profile: str) -> Iterator[dict[str, Any]]:
    k = _keys(conn, profile)
    for r in conn.execute("SELECT * FROM sessions WHERE profile = ? ORDER BY id", (profile,)):
        yield {
            "type": "session",
            "key": k.sessions[r["id"]],
            "profile": profile,
            "started_at": r["started_at"],
            "last_turn_at": r["last_turn_at"],
            "turns": r["turns"],
        }
    for r in conn.execute("SELECT * FROM turns WHERE profile = ? ORDER BY id", (profile,)):
        meta = json.loads(r["meta"] or "{}")
        if isinstance(meta.get("reply_to"), int):
            meta["reply_to"] = k.turns.get(meta["reply_to"])
        usage = None
        if r["role"] == "assistant" and r["input_tokens"] is not None:
            usage = {
                c: r[c]
                for c in (
                    "input_tokens",
                    "output_tokens",
                    "cache_read_tokens",
                    "cache_write_tokens",
                )  # fmt: skip
            }
        yield {
            "type": "turn",
            "key": k.turns[r["id"]],
            "profile": profile,
            "session": k.sessions[r["session_id"]],
            "role": r["role"],
            "content": r["content"],
            "ts": r["ts"],
            "model": r["model"],
            "status": r["status"],
            "usage": usage,
            "meta": meta,
            "source_key": r["source_key"],
        }
    for r in conn.execute("SELECT * FROM digests WHERE profile = ? ORDER BY id", (profile,)):
        facts = json.loads(r["facts"])
        for fact in facts:
            if isinstance(fact, dict) and isinstance(fact.get("turn_id"), int):
                fact["turn_id"] = k.turns.get(fact["turn_id"])
        yield {
            "type": "digest",
            "key": k.digests[r["id"]],
            "profile": profile,
            "session": k.sessions[r["session_id"]],
            "started_at": r["started_at"],
            "ended_at": r["ended_at"],
            "narrative": r["narrative"],
            "facts": facts,
            "procedures": json.loads(r["procedures"]),
            "decisions": json.loads(r["decisions"]),
            "source_turns": [k.turns.get(i) for i in json.loads(r["source_turn_ids"])],
            "model": r["model"],
            "created_at": r["created_at"],
        }
    for r in conn.execute("SELECT * FROM memory_items WHERE profile = ? ORDER BY id", (profile,)):
        yield {
            "type": "memory_item",
            "key": k.items[r["id"]],
            "profile": profile,
            **{
                c: r[c]
                for c in (
                    "category",
                    "topic",
                    "label",
                    "content_key",
                    "confidence",
                    "reinforcements",
                    "reason",
                    "source",
                    "created_at",
                    "reinforced_at",
                    "status",
                    "due_at",
                )  # fmt: skip
            },
            "properties": json.loads(r["properties"]),
            "pinned": bool(r["pinned"]),
            "source_turn": _ref(k.turns, r["source_turn_id"]),
            "superseded_by": _ref(k.items, r["superseded_by"]),
            "conflict_with": _ref(k.items, r["conflict_with"]),
        }
    for r in conn.execute("SELECT * FROM memory_events WHERE profile = ? ORDER BY id", (profile,)):
        yield {
            "type": "memory_event",
            "key": k.events[r["id"]],
            "profile": profile,
            "item": k.items[r["item_id"]],
            "ts": r["ts"],
            "kind": r["kind"],
            "cause": r["cause"],
            "related_item": _ref(k.items, r["related_item_id"]),
            "source_turn": _ref(k.turns, r["source_turn_id"]),
            "data": json.loads(r["data"] or "{}"),
        }


class snapshot:  # noqa: N801 - used as a context manager, like `write`
    """A read transaction: every query inside sees one consistent state of the database."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN")
        self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return self.conn

    def __exit__(self, *exc: object) -> None:
        self.conn.execute("ROLLBACK")


# --- import ------------------------------------------------------------------------------


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
    the line of the first record that is malformed or refers to a key not seen before; then
    nothing is written."""
    counts = ImportCounts()
    keyed: dict[str, _Keyed] = {}
    maps: dict[str, dict[str, int]] = {}
    links: list[tuple[int, int, str | None, str | None, str]] = []
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
            if profile not in keyed:
                keyed[profile] = _keys(conn, profile)
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
    return counts


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
        cur = conn.execute(
            "INSERT INTO memory_items(profile, category, topic, label, properties, content_key, "
            "confidence, reinforcements, pinned, reason, source, source_turn_id, created_at, "
            "reinforced_at, status, due_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                profile, rec["category"], rec["topic"], rec["label"],
                json.dumps(rec.get("properties") or {}, ensure_ascii=False), rec["content_key"],
                float(rec["confidence"]), int(rec.get("reinforcements", 1)),
                1 if rec.get("pinned") else 0, rec.get("reason", ""), rec["source"],
                ref("source_turn", required=False), rec["created_at"], rec["reinforced_at"],
                rec["status"], rec.get("due_at"),
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
