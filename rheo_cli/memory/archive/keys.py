"""The export format's name, its one version constant and record kinds, and the stable keys
by which records refer to each other.

Records carry no local row ids: a turn's key is a hash of its profile, time, role, text, model
and status; a session's is its first turn's; a digest's its session's; a memory item's a hash
of its content (JSON with sorted keys) and origin; an event's a hash of its item's key and its
own content. A key repeated in one profile gets ``~2``, ``~3``... in id order. An import
computes the same keys from each record's content (never trusting the key the file gives,
which only names the record within the file), so importing a file twice, or into a store
that already holds some of it, adds only what is missing; a purge lists the keys of what it
erased in its tombstone (`keys_for`).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..store.api import Connection, Row

FORMAT = "rheo-export"
"""The ``format`` of an export's header line: how a reader knows the file is rheo's."""

VERSION = 3
"""The newest export format version this rheo reads and writes: the one version constant of
rheo's export (`rheo_cli.transfer.formats` lists it). A file's header says the oldest version
that reads it (`version_for`), so an older rheo refuses a file holding what it does not know
in one line, rather than misreading it, and files without those records stay what they were:
1, a profile's ledger and memory; 2, with the knowledge base; 3, with memory items of one
assistant (their ``assistant`` field)."""

KINDS = ("session", "turn", "digest", "memory_item", "memory_event")
"""The record kinds of a profile's ledger and memory (the knowledge base adds its own)."""


def version_for(*, knowledge: bool, assistants: bool) -> int:
    """The version an export's header says (see `VERSION`): 3 with memory items of one
    assistant, else 2 with knowledge-base records, else 1."""
    return 3 if assistants else 2 if knowledge else 1


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
class Keyed:
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


class Fields(Protocol):
    """A row or a record: its fields by name."""

    def __getitem__(self, name: str, /) -> Any: ...


def canonical_json(value: Any) -> str:
    """``value`` as the JSON text keys are computed from (keys sorted, not ASCII-escaped)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def suffixed(base: str, n: int) -> str:
    """The key of the ``n``-th (from 1) record of a profile whose content gives ``base``."""
    return base if n == 1 else f"{base}~{n}"


def turn_base(r: Fields) -> str:
    """The key of a turn before any ``~n`` (a row, or a record: profile, ts, role, content,
    model, status)."""
    return "t" + _hash(r["profile"], r["ts"], r["role"], r["content"], r["model"], r["status"])


def item_base(r: Fields, properties: str) -> str:
    """The key of a memory item before any ``~n``, ``properties`` as `canonical_json` text."""
    return "m" + _hash(
        r["profile"], r["category"], r["topic"], r["label"], properties, r["created_at"],
        r["source"],
    )  # fmt: skip


def event_base(item_key: str, r: Fields, data: str) -> str:
    """The key of a memory event of the item keyed ``item_key`` before any ``~n``, ``data``
    as `canonical_json` text."""
    return "e" + _hash(item_key, r["ts"], r["kind"], r["cause"], data)


def session_base(profile: str, first_turn_key: str | None, started_at: str) -> str:
    """The key of a session before any ``~n``: its first turn's, or (no turn) a hash of its
    start."""
    base = first_turn_key or ("x" + _hash(profile, started_at))
    return "s" + base[1:]


def digest_key(session_key: str) -> str:
    """The key of the digest of the session keyed ``session_key`` (one per session)."""
    return "d" + session_key[1:]


def _turn_base(r: Row) -> str:
    return turn_base(r)


def _item_base(r: Row, *, legacy: bool = False) -> str:
    properties = r["properties"] if legacy else _canonical(r["properties"])
    return item_base(r, properties)


def _event_base(item_key: str, r: Row, *, legacy: bool = False) -> str:
    data = r["data"] if legacy else _canonical(r["data"])
    return event_base(item_key, r, data)


def keys_of(conn: Connection, profile: str) -> Keyed:
    """The key of every stored row of ``profile`` (sessions, turns, digests, memory items,
    memory events), computed from content as the module docstring says, and the keys items
    and events had before JSON was canonical (``legacy``)."""
    keyed = Keyed()
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
        sessions.add(r["id"], session_base(profile, first_turn.get(r["id"]), r["started_at"]))
    keyed.sessions = sessions.by_id
    keyed.digests = {
        r["id"]: digest_key(keyed.sessions[r["session_id"]])
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


def _ranked(base: str, row_id: int, rivals: Iterable[tuple[int, str]]) -> str:
    """``base`` numbered as `keys_of` numbers it: by the rows of the same base before it."""
    return suffixed(base, 1 + sum(1 for other, b in rivals if b == base and other < row_id))


def keys_for(
    conn: Connection,
    profile: str,
    *,
    turns: Iterable[int] = (),
    sessions: Iterable[int] = (),
    items: Iterable[int] = (),
    events: Iterable[int] = (),
    digests: Iterable[int] = (),
) -> list[str]:
    """The keys (as `keys_of` gives them) of these rows of ``profile``, by id, without
    computing the whole profile's: each row is numbered against the rows that could share its
    base (turns of the same time, items created at the same time with the same topic, events
    of the same item at the same time). Ids not stored are skipped. Sorted, no repeats."""
    find = _RowKeys(conn, profile)
    out: set[str | None] = set()
    out.update(find.key_of_turn(turn_id) for turn_id in turns)
    out.update(find.key_of_session(session_id) for session_id in sessions)
    out.update(find.key_of_digest(digest_id) for digest_id in digests)
    out.update(find.key_of_item(item_id) for item_id in items)
    out.update(find.key_of_event(event_id) for event_id in events)
    return sorted(key for key in out if key)


class _RowKeys:
    """The keys of single rows of one profile, for `keys_for`: each ``key_of_*`` takes a row
    id and gives its key, or None when the profile holds no such row. Turn and item keys are
    kept, as sessions and events ask for them again."""

    def __init__(self, conn: Connection, profile: str) -> None:
        self.conn = conn
        self.profile = profile
        self._turns: dict[int, str] = {}
        self._items: dict[int, str] = {}

    def key_of_turn(self, turn_id: int) -> str | None:
        """The key of a turn, numbered among the profile's turns at the same time."""
        if turn_id not in self._turns:
            row = self.conn.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE id = ? AND profile = ?",
                (turn_id, self.profile),
            ).fetchone()
            if row is None:
                return None
            rivals = self.conn.execute(
                f"SELECT {_TURN_COLUMNS} FROM turns WHERE profile = ? AND ts = ? AND id < ?",
                (self.profile, row["ts"], turn_id),
            ).fetchall()
            self._turns[turn_id] = _ranked(
                turn_base(row), turn_id, ((int(r["id"]), turn_base(r)) for r in rivals)
            )
        return self._turns[turn_id]

    def key_of_session(self, session_id: int) -> str | None:
        """The key of a session: from its first turn's, or (no turn) numbered among the
        sessions without turns started at the same time."""
        profile = self.profile
        row = self.conn.execute(
            "SELECT id, started_at, (SELECT min(id) FROM turns t WHERE t.session_id = s.id "
            "AND t.profile = s.profile) AS first_turn FROM sessions s WHERE id = ? "
            "AND profile = ?",
            (session_id, profile),
        ).fetchone()
        if row is None:
            return None
        if row["first_turn"] is not None:
            first = self.key_of_turn(int(row["first_turn"]))
            return session_base(profile, first, row["started_at"])
        # Sessions without turns share a base only with those started at the same time.
        rivals = self.conn.execute(
            "SELECT id FROM sessions s WHERE profile = ? AND started_at = ? AND id < ? "
            "AND NOT EXISTS (SELECT 1 FROM turns t WHERE t.session_id = s.id)",
            (profile, row["started_at"], session_id),
        ).fetchall()
        return suffixed(session_base(profile, None, row["started_at"]), 1 + len(rivals))

    def key_of_digest(self, digest_id: int) -> str | None:
        """The key of a digest: its session's (`digest_key`)."""
        row = self.conn.execute(
            "SELECT session_id FROM digests WHERE id = ? AND profile = ?",
            (digest_id, self.profile),
        ).fetchone()
        session = self.key_of_session(int(row["session_id"])) if row is not None else None
        return digest_key(session) if session else None

    def key_of_item(self, item_id: int) -> str | None:
        """The key of a memory item, numbered among the profile's items of the same topic
        created at the same time."""
        if item_id not in self._items:
            row = self.conn.execute(
                "SELECT * FROM memory_items WHERE id = ? AND profile = ?",
                (item_id, self.profile),
            ).fetchone()
            if row is None:
                return None
            rivals = self.conn.execute(
                "SELECT * FROM memory_items WHERE profile = ? AND topic = ? AND created_at = ? "
                "AND id < ?",
                (self.profile, row["topic"], row["created_at"], item_id),
            ).fetchall()
            self._items[item_id] = _ranked(
                _item_base(row), item_id, ((int(r["id"]), _item_base(r)) for r in rivals)
            )
        return self._items[item_id]

    def key_of_event(self, event_id: int) -> str | None:
        """The key of a memory event, numbered among its item's events at the same time."""
        row = self.conn.execute(
            "SELECT id, item_id, ts, kind, cause, data FROM memory_events WHERE id = ? "
            "AND profile = ?",
            (event_id, self.profile),
        ).fetchone()
        owner = self.key_of_item(int(row["item_id"])) if row is not None else None
        if row is None or owner is None:
            return None
        rivals = self.conn.execute(
            "SELECT id, ts, kind, cause, data FROM memory_events WHERE item_id = ? "
            "AND profile = ? AND ts = ? AND id < ?",
            (row["item_id"], self.profile, row["ts"], event_id),
        ).fetchall()
        return _ranked(
            _event_base(owner, row),
            event_id,
            ((int(r["id"]), _event_base(owner, r)) for r in rivals),
        )


_TURN_COLUMNS = "id, profile, session_id, ts, role, content, model, status"


def turn_bases_at(conn: Connection, profile: str, times: Iterable[str]) -> Counter[str]:
    """How many stored turns of ``profile`` have each turn base key (`turn_base`), among the
    turns at these stored UTC ``times`` (the candidates an import compares by content)."""
    found: Counter[str] = Counter()
    wanted = sorted(set(times))
    for start in range(0, len(wanted), 500):
        chunk = wanted[start : start + 500]
        marks = ",".join("?" * len(chunk))
        for r in conn.execute(
            f"SELECT {_TURN_COLUMNS} FROM turns WHERE profile = ? AND ts IN ({marks})",
            (profile, *chunk),
        ).fetchall():
            found[turn_base(r)] += 1
    return found
