"""Import: records as `export.export_records` makes them, written in one transaction, so
nothing is half imported.

Whether a record is already stored is decided by its content, never by the key the file
gives it: each record's key is computed from what it holds, as `keys.keys_of` computes the
stored rows' (a turn's from its profile, time, role, text, model and status; a session's from
its first turn; a digest's from its session; an item's from its content and origin; an event's
from its item and its own content), and a record whose key is stored is skipped. The file's
keys only name records within the file, for the records that refer to them (a reference may
also name a stored row by its content key). So a file whose keys were changed, or never were
rheo's, imports once and then adds nothing.

A record whose content key a purge tombstone lists (`tombstones`) is left out and counted,
and so is a record that needs one left out (a turn of a purged session, an event of a purged
item); a link to one is dropped (an item whose replacement was purged is active again), unless
the caller includes purged records.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..facts.scope import check_assistant
from ..ledger import counters
from ..store import crash
from ..store.api import Connection, Cursor
from ..store.db import write
from ..store.errors import Integrity, InvalidInput
from ..store.profiles import check_profile
from ..store.timeutil import from_stored, to_stored
from ..windows import check as check_window
from .keys import (
    KINDS,
    canonical_json,
    digest_key,
    event_base,
    item_base,
    keys_of,
    session_base,
    suffixed,
    turn_base,
)
from .tombstones import purged_keys

PURGED = -1
"""The local id of a record left out because a purge erased it."""


@dataclass
class ImportCounts:
    """Records added per kind, those already present (skipped), and those left out because a
    purge of this store erased them (``purged``)."""

    added: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    present: int = 0
    purged: int = 0


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


@dataclass
class _Session:
    """A session record of the file, written only once a record needs it (its identity is its
    first turn's, which comes after it)."""

    line: int
    rec: dict[str, Any]
    first: str | None = None
    """The content key of the file's first turn of this session."""
    id: int | None = None


class _Profile:
    """One profile's side of an import: the stored rows by content key, what purges erased,
    and the file's own keys resolved to local ids."""

    def __init__(self, conn: Connection, profile: str, include_purged: bool) -> None:
        keyed = keys_of(conn, profile)
        self.profile = profile
        self.stored: dict[str, int] = {
            v: i
            for d in (keyed.sessions, keyed.turns, keyed.items, keyed.events, keyed.digests)
            for i, v in d.items()
        }
        for old, row_id in keyed.legacy.items():  # references by keys of older files
            self.stored.setdefault(old, row_id)
        self.item_key: dict[int, str] = dict(keyed.items)
        self.session_key: dict[int, str] = dict(keyed.sessions)
        self.digested: set[int] = {
            int(r[0])
            for r in conn.execute(
                "SELECT session_id FROM digests WHERE profile = ?", (profile,)
            ).fetchall()
        }
        self.purged: set[str] = set() if include_purged else purged_keys(conn, profile)
        self.file: dict[str, int] = {}
        """File key -> local id (`PURGED` for a record left out)."""
        self.sessions: dict[str, _Session] = {}
        self.named_stored: set[str] = set()
        """Stored sessions' content keys that records of the file named before (if ever) the
        session's own record."""
        self.seen: Counter[str] = Counter()
        self.first_line: dict[str, tuple[int, int]] = {}
        """File key -> (line, hash of the record) of its first use, to tell a repeat from a
        clash."""

    def content_key(self, base: str) -> str:
        """The key of the next record of ``base`` in the file (``~n`` for the n-th)."""
        self.seen[base] += 1
        return suffixed(base, self.seen[base])


def import_records(
    conn: Connection,
    records: Iterable[tuple[int, dict[str, Any]]],
    *,
    include_purged: bool = False,
) -> ImportCounts:
    """Write ``(line number, record)`` pairs (records as `export_records` makes them) in one
    transaction; records already stored, by content (see the module docstring), are skipped,
    and so, unless ``include_purged``, are those a purge of this store erased. Raises
    InvalidInput naming the line of the first record that is malformed, names a profile no
    command accepts, refers to a key not seen before, or reuses a key of another record;
    then nothing is written. A session that gains turns has its counters (turns, first and
    last turn's time) recounted from them."""
    counts = ImportCounts()
    state: dict[str, _Profile] = {}
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
            if profile not in state:
                state[profile] = _Profile(conn, profile, include_purged)
            p = state[profile]
            if _repeated(p, key, rec, line):
                counts.present += 1
                continue
            _check_times(rec, line)
            importer = _Importer(conn, p, rec, line, counts, links)
            try:
                importer.run(kind, key)
            except Integrity as exc:
                raise InvalidInput(f"line {line}: the {kind} record was refused: {exc}") from None
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise InvalidInput(f"line {line}: malformed {kind} record ({exc})") from None
            if importer.session_gained is not None:
                touched.setdefault(profile, set()).add(importer.session_gained)
            crash.reach("import.record")
        for p in state.values():
            for session in p.sessions.values():
                if session.id is None:
                    _last_session(conn, p, session, counts)
        for item_id, line, superseded, conflict, profile in links:
            _link(conn, state[profile], item_id, line, superseded, conflict)
        # A session already stored that gains turns (a later export of it) counts them.
        for profile, sessions in touched.items():
            counters.recount(conn, sessions, profile)
    return counts


def _repeated(p: _Profile, key: str, rec: dict[str, Any], line: int) -> bool:
    """True when ``key`` named an earlier record of the file that was the same record (a file
    holding an export twice); raises InvalidInput when it named another one."""
    digest = hash(json.dumps(rec, sort_keys=True, default=str))
    first = p.first_line.get(key)
    if first is None:
        p.first_line[key] = (line, digest)
        return False
    if first[1] == digest:
        return True
    raise InvalidInput(f"line {line}: key {key!r} already names the record of line {first[0]}")


def _check_profile(name: str, line: int) -> None:
    """The rule every command holds profile names to (`check_profile`), naming the line: a
    profile no command accepts could never be viewed or purged."""
    try:
        check_profile(name)
    except InvalidInput as exc:
        raise InvalidInput(f"line {line}: {exc}") from None


def _new_session(conn: Connection, p: _Profile, s: _Session, counts: ImportCounts) -> int:
    """Insert the file's session ``s`` (its key not stored) and return its id."""
    rec = s.rec
    _need(rec, s.line, "started_at", "last_turn_at", "turns")
    cur = conn.execute(
        "INSERT INTO sessions(profile, started_at, last_turn_at, turns) VALUES (?, ?, ?, ?)",
        (p.profile, rec["started_at"], rec["last_turn_at"], int(rec["turns"])),
    )
    assert cur.lastrowid is not None
    counts.added["session"] += 1
    return int(cur.lastrowid)


def _file_session_key(p: _Profile, s: _Session) -> str:
    """The key the exporting store gave session ``s``: its first turn's in the file, or
    (none) its start's."""
    return session_base(p.profile, s.first, str(s.rec.get("started_at", "")))


def _materialise(conn: Connection, p: _Profile, s: _Session, counts: ImportCounts) -> int:
    """The local id of session ``s`` for a record being written into it: the stored session
    of the same key, or a new one."""
    if s.id is None:
        key = _file_session_key(p, s)
        if key in p.stored:
            s.id = p.stored[key]
            counts.present += 1
        else:
            s.id = _new_session(conn, p, s, counts)
            p.stored[key] = s.id
            p.session_key[s.id] = key
    return s.id


def _last_session(conn: Connection, p: _Profile, s: _Session, counts: ImportCounts) -> None:
    """A session of the file no written record needed: its turns were all left out as
    purged, or it holds none (then it is written unless stored or purged)."""
    if s.first is not None:
        counts.purged += 1
        return
    key = _file_session_key(p, s)
    if key in p.stored:
        counts.present += 1
    elif key in p.purged:
        counts.purged += 1
    else:
        s.id = _new_session(conn, p, s, counts)


def _link(
    conn: Connection,
    p: _Profile,
    item_id: int,
    line: int,
    superseded: str | None,
    conflict: str | None,
) -> None:
    """Point a new item at the items the file says replaced it or conflict with it; one left
    out as purged is no link (a replaced item whose replacement was purged is active)."""
    for column, value in (("superseded_by", superseded), ("conflict_with", conflict)):
        if value is None:
            continue
        target = p.file.get(value, p.stored.get(value))
        if target is None:
            raise InvalidInput(f"line {line}: {column} {value!r} is not in the file")
        if target == PURGED:
            if column == "superseded_by":
                conn.execute(
                    "UPDATE memory_items SET status = 'active' WHERE id = ? AND profile = ? "
                    "AND status = 'superseded'",
                    (item_id, p.profile),
                )
            continue
        conn.execute(
            f"UPDATE memory_items SET {column} = ? WHERE id = ? AND profile = ?",
            (target, item_id, p.profile),
        )


class _Importer:
    """Writes one record (or finds it stored, or leaves it out as purged)."""

    def __init__(
        self,
        conn: Connection,
        p: _Profile,
        rec: dict[str, Any],
        line: int,
        counts: ImportCounts,
        links: list[tuple[int, int, str | None, str | None, str]],
    ) -> None:
        self.conn, self.p, self.rec, self.line = conn, p, rec, line
        self.counts, self.links = counts, links
        self.session_gained: int | None = None

    def ref(self, value: Any, what: str) -> int:
        """The local id a reference names (a key of the file, or a stored content key), or
        `PURGED`; an unknown key is an InvalidInput naming the line."""
        if isinstance(value, str):
            if value in self.p.file:
                return self.p.file[value]
            if value in self.p.stored:
                return self.p.stored[value]
        raise InvalidInput(f"line {self.line}: {what} {value!r} is not a record before it")

    def optional(self, name: str) -> int | None:
        """The local id of the record field ``name`` names; None when unset or purged."""
        value = self.rec.get(name)
        if value is None:
            return None
        found = self.ref(value, name)
        return None if found == PURGED else found

    def session(self) -> _Session | int:
        """The session the record belongs to: a session record of the file (maybe not written
        yet), a stored session's id, or `PURGED`."""
        value = self.rec["session"]
        if isinstance(value, str) and value in self.p.sessions:
            return self.p.sessions[value]
        found = self.ref(value, "session")
        if value not in self.p.file:  # a stored session, named by its content key
            self.p.named_stored.add(value)
        return found

    def settle(self, key: str, content_key: str) -> bool:
        """Map ``key`` for a record stored already (True, counted present) or erased by a
        purge (True, counted purged); False when it is to be written."""
        if content_key in self.p.stored:
            self.p.file[key] = self.p.stored[content_key]
            self.counts.present += 1
            return True
        if content_key in self.p.purged:
            return self.left_out(key)
        return False

    def left_out(self, key: str) -> bool:
        self.p.file[key] = PURGED
        self.counts.purged += 1
        return True

    def wrote(self, kind: str, key: str, content_key: str, cur: Cursor) -> int:
        assert cur.lastrowid is not None
        new_id = int(cur.lastrowid)
        self.p.file[key] = new_id
        self.p.stored[content_key] = new_id
        self.counts.added[kind] += 1
        return new_id

    def run(self, kind: str, key: str) -> None:
        getattr(self, f"_{kind}")(key)

    def _session(self, key: str) -> None:
        _need(self.rec, self.line, "started_at", "last_turn_at", "turns")
        if key in self.p.named_stored:
            # Records before it already named this stored session by its key (a file whose
            # records were reordered): it is that session, not a new, empty one.
            self.p.file[key] = self.p.stored[key]
            self.counts.present += 1
            return
        self.p.sessions[key] = _Session(self.line, self.rec)

    def _turn(self, key: str) -> None:
        rec, p = self.rec, self.p
        _need(rec, self.line, "session", "role", "content", "ts")
        session = self.session()
        if session == PURGED:
            self.left_out(key)
            return
        content_key = p.content_key(turn_base({
            "profile": p.profile, "ts": rec["ts"], "role": rec["role"],
            "content": str(rec["content"]), "model": rec.get("model"),
            "status": rec.get("status"),
        }))  # fmt: skip
        if isinstance(session, _Session) and session.first is None:
            session.first = content_key
        if self.settle(key, content_key):
            stored = p.file[key]
            if isinstance(session, _Session) and session.id is None and stored != PURGED:
                # The file's session is the stored one this turn is in.
                row = self.conn.execute(
                    "SELECT session_id FROM turns WHERE id = ? AND profile = ?",
                    (stored, p.profile),
                ).fetchone()
                session.id = int(row[0])
                self.counts.present += 1
            return
        session_id = (
            _materialise(self.conn, p, session, self.counts)
            if isinstance(session, _Session)
            else session
        )
        meta = dict(rec.get("meta") or {})
        if "reply_to" in meta and meta["reply_to"] is not None:
            question = self.ref(meta["reply_to"], "reply_to")
            meta["reply_to"] = None if question == PURGED else question
        usage = rec.get("usage") or {}
        cur = self.conn.execute(
            "INSERT INTO turns(profile, session_id, role, content, ts, model, status, "
            "input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, meta, "
            "source_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                p.profile, session_id, rec["role"], str(rec["content"]), rec["ts"],
                rec.get("model"), rec.get("status"), usage.get("input_tokens"),
                usage.get("output_tokens"), usage.get("cache_read_tokens"),
                usage.get("cache_write_tokens"), json.dumps(meta, ensure_ascii=False),
                rec.get("source_key"),
            ),
        )  # fmt: skip
        self.wrote("turn", key, content_key, cur)
        self.session_gained = session_id

    def _digest(self, key: str) -> None:
        rec, p = self.rec, self.p
        _need(rec, self.line, "session", "started_at", "ended_at", "narrative", "created_at")
        session = self.session()
        if session == PURGED:
            self.left_out(key)
            return
        if isinstance(session, _Session):
            session_key = _file_session_key(p, session)
            local = session.id if session.id is not None else p.stored.get(session_key)
        else:
            session_key, local = p.session_key[session], session
        content_key = digest_key(session_key)
        if local is not None and local in p.digested:  # one digest per session
            self.counts.present += 1
            return
        if content_key in p.purged:
            self.left_out(key)
            return
        facts = [dict(f) if isinstance(f, dict) else f for f in rec.get("facts") or []]
        for fact in facts:
            if isinstance(fact, dict) and fact.get("turn_id") is not None:
                turn = self.ref(fact["turn_id"], "turn_id")
                fact["turn_id"] = None if turn == PURGED else turn
        turn_ids = [self.ref(t, "source turn") for t in rec.get("source_turns") or [] if t]
        session_id = (
            _materialise(self.conn, p, session, self.counts)
            if isinstance(session, _Session)
            else session
        )
        cur = self.conn.execute(
            "INSERT INTO digests(profile, session_id, started_at, ended_at, narrative, facts, "
            "procedures, decisions, source_turn_ids, model, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                p.profile, session_id, rec["started_at"], rec["ended_at"], rec["narrative"],
                json.dumps(facts, ensure_ascii=False),
                json.dumps(rec.get("procedures") or [], ensure_ascii=False),
                json.dumps(rec.get("decisions") or [], ensure_ascii=False),
                json.dumps([t for t in turn_ids if t != PURGED]), rec.get("model"),
                rec["created_at"],
            ),
        )  # fmt: skip
        self.wrote("digest", key, content_key, cur)
        p.digested.add(session_id)

    def _memory_item(self, key: str) -> None:
        rec, p = self.rec, self.p
        _need(rec, self.line, "category", "topic", "label", "content_key", "confidence",
              "source", "created_at", "reinforced_at", "status")  # fmt: skip
        properties = rec.get("properties") or {}
        content_key = p.content_key(item_base({**rec, "profile": p.profile},
                                              canonical_json(properties)))  # fmt: skip
        if self.settle(key, content_key):
            return
        assistant = rec.get("assistant")  # absent (files before it, shared facts): shared
        if assistant is not None:
            try:
                check_assistant(assistant)
            except InvalidInput as exc:
                raise InvalidInput(f"line {self.line}: {exc}") from None
        valid_from, valid_until = rec.get("valid_from"), rec.get("valid_until")
        try:
            check_window(valid_from, valid_until)
        except (InvalidInput, ValueError, TypeError) as exc:
            raise InvalidInput(f"line {self.line}: {exc}") from None
        cur = self.conn.execute(
            "INSERT INTO memory_items(profile, category, topic, label, properties, content_key, "
            "confidence, reinforcements, pinned, reason, source, source_turn_id, created_at, "
            "reinforced_at, status, due_at, assistant, valid_from, valid_until) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                p.profile, rec["category"], rec["topic"], rec["label"],
                json.dumps(properties, ensure_ascii=False), rec["content_key"],
                float(rec["confidence"]), int(rec.get("reinforcements", 1)),
                1 if rec.get("pinned") else 0, rec.get("reason", ""), rec["source"],
                self.optional("source_turn"), rec["created_at"], rec["reinforced_at"],
                rec["status"], rec.get("due_at"), assistant, valid_from, valid_until,
            ),
        )  # fmt: skip
        new_id = self.wrote("memory_item", key, content_key, cur)
        p.item_key[new_id] = content_key
        self.links.append(
            (new_id, self.line, rec.get("superseded_by"), rec.get("conflict_with"), p.profile)
        )

    def _memory_event(self, key: str) -> None:
        rec, p = self.rec, self.p
        _need(rec, self.line, "item", "ts", "kind", "cause")
        item = self.ref(rec["item"], "item")
        if item == PURGED:
            self.left_out(key)
            return
        data = rec.get("data") or {}
        content_key = p.content_key(event_base(p.item_key[item], rec, canonical_json(data)))
        if self.settle(key, content_key):
            return
        cur = self.conn.execute(
            "INSERT INTO memory_events(item_id, profile, ts, kind, cause, related_item_id, "
            "source_turn_id, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                item, p.profile, rec["ts"], rec["kind"], rec["cause"],
                self.optional("related_item"), self.optional("source_turn"),
                json.dumps(data, ensure_ascii=False),
            ),
        )  # fmt: skip
        self.wrote("memory_event", key, content_key, cur)
