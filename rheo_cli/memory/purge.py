"""`purge`: the one deliberate erase of a turn, a session, a memory item or a whole profile.

Everything else in rheo keeps history (forgetting a memory retracts it; the ledger refuses
UPDATE and DELETE). A purge removes the content for good: the rows, their search entries,
what was derived from them (memory items learnt from a purged turn, the digest of its
session, their jobs), and then the bytes (the store's compaction: on SQLite the file is
VACUUMed with ``secure_delete`` on and the WAL truncated, on PostgreSQL the touched tables
are rewritten). What the purged turns did to the memory items that stay (a fact they
replaced, an open item they closed, a reinforcement) is undone and the history events that
quote them are erased (`purge_undo` says exactly what counts as learnt from them). A
tombstone in ``purges`` says what was erased and when, never the content: only the content
keys of the erased records (`archive.keys`), by which an import of an older export leaves
them out. The append-only guards stand aside only inside the purge's own transaction, for
the purged profile's rows, and are back before its tombstone is written
(`api.Store.purging`). One erase on both stores, in plain SQL naming the profile in every
statement; the Redis hot cache, if installed, is dropped.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from . import purge_undo
from .archive.keys import keys_for, keys_of
from .facts import hotcache
from .kb.transfer import keys as kb_keys
from .store import crash
from .store.api import Connection, Purging
from .store.errors import InvalidInput, NotFound
from .store.timeutil import to_stored
from .text.render import plural

WHATS = ("turn", "session", "memory", "profile")


@dataclass
class Purged:
    """What a purge erased: ``counts`` of rows per kind (turns, sessions, memory_items,
    memory_events, digests, jobs) and what its compaction did (`api.Compaction`): whether
    the store was rewritten without the erased bytes and its WAL emptied, the tables not
    rewritten yet (None where a whole file is compacted), and the note for the person."""

    what: str
    ref: str
    counts: dict[str, int] = field(default_factory=dict)
    vacuumed: bool = False
    wal_truncated: bool = False
    not_rewritten: list[str] | None = None
    note: str | None = None


@dataclass(frozen=True)
class Target:
    """The rows a purge would erase (ids), found by `plan`."""

    what: str
    profile: str
    ref_id: int | None
    turns: list[int]
    sessions_emptied: list[int]
    sessions_touched: list[int]
    items: list[int]
    digests: list[int]
    events: list[int] = field(default_factory=list)
    """Events of kept items learnt from the turns without citing them (`purge_undo.uncited`)."""

    def describe(self) -> str:
        """A short line for the confirmation prompt: what will be erased, with counts."""
        parts = [plural(len(self.turns), "turn")]
        if self.items:
            parts.append(plural(len(self.items), "memory item"))
        if self.digests:
            parts.append(plural(len(self.digests), "digest"))
        head = (
            f"profile {self.profile!r}" if self.what == "profile" else f"{self.what} #{self.ref_id}"
        )
        return f"{head}: {', '.join(parts)}"


def _chunks(ids: Sequence[int], size: int = 500) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


def _ids(conn: Connection, sql: str, args: Iterable[object]) -> list[int]:
    return [int(r[0]) for r in conn.execute(sql, tuple(args)).fetchall()]


def _in(conn: Connection, sql: str, ids: Sequence[int], *extra: object) -> list[int]:
    """Run ``sql`` (holding one ``{ids}`` placeholder list) over ``ids`` in chunks."""
    out: list[int] = []
    for chunk in _chunks(ids):
        marks = ",".join("?" * len(chunk))
        out += _ids(conn, sql.format(ids=marks), [*chunk, *extra])
    return out


def plan(conn: Connection, *, profile: str, what: str, ref_id: int | None) -> Target:
    """The rows a purge of ``what`` (turn, session, memory, profile) ``ref_id`` would erase:
    the turns, the sessions they empty, the memory items learnt from them (their source turn
    is purged; for a turn, also what its session's digest learnt citing no turn), the digests
    of the sessions they touch, and events of kept items learnt from them without citing them
    (`purge_undo` says what else is taken back when the purge runs).

    Raises InvalidInput for an unknown ``what`` and NotFound when the turn, session or
    memory item is not the profile's (or the profile has nothing stored)."""
    if what not in WHATS:
        raise InvalidInput(f"purge what? one of {', '.join(WHATS)}, not {what!r}")
    if what == "profile":
        turns = _ids(conn, "SELECT id FROM turns WHERE profile = ? ORDER BY id", [profile])
        sessions = _ids(conn, "SELECT id FROM sessions WHERE profile = ?", [profile])
        items = _ids(conn, "SELECT id FROM memory_items WHERE profile = ?", [profile])
        if not (turns or sessions or items):
            raise NotFound(f"profile {profile!r} has nothing stored")
        digests = _ids(conn, "SELECT id FROM digests WHERE profile = ?", [profile])
        return Target(what, profile, None, turns, sessions, sessions, items, digests)
    assert ref_id is not None
    if what == "memory":
        if not _ids(
            conn, "SELECT id FROM memory_items WHERE id = ? AND profile = ?", [ref_id, profile]
        ):
            raise NotFound(f"no memory #{ref_id} in profile {profile!r}")
        return Target(what, profile, ref_id, [], [], [], [ref_id], [])
    if what == "turn":
        found = _ids(conn, "SELECT session_id FROM turns WHERE id = ? AND profile = ?",
                     [ref_id, profile])  # fmt: skip
        if not found:
            raise NotFound(f"no turn #{ref_id} in profile {profile!r}")
        turns = [ref_id]
        touched = found
        left = _ids(conn, "SELECT count(*) FROM turns WHERE session_id = ? AND profile = ?",
                    [*found, profile])[0] - 1  # fmt: skip
        emptied = found if left == 0 else []
    else:
        if not _ids(
            conn, "SELECT id FROM sessions WHERE id = ? AND profile = ?", [ref_id, profile]
        ):
            raise NotFound(f"no session #{ref_id} in profile {profile!r}")
        turns = _ids(conn, "SELECT id FROM turns WHERE session_id = ? AND profile = ? ORDER BY id",
                     [ref_id, profile])  # fmt: skip
        touched = emptied = [ref_id]
    items = _in(conn, "SELECT id FROM memory_items WHERE source_turn_id IN ({ids}) "
                "AND profile = ?", turns, profile)  # fmt: skip
    digests = _in(conn, "SELECT id FROM digests WHERE session_id IN ({ids}) AND profile = ?",
                  touched, profile)  # fmt: skip
    if emptied:
        return Target(what, profile, ref_id, turns, emptied, touched, items, digests)
    # The session keeps turns: what its digest learnt without citing one may be the purged
    # turn's, so it goes too (the digest is written again from the turns left).
    more, events = purge_undo.uncited(conn, profile, digests)
    items = sorted({*items, *more})
    return Target(what, profile, ref_id, turns, emptied, touched, items, digests, events)


@dataclass(frozen=True)
class Work:
    """What `prepare` found inside the purge's transaction, besides the target's own rows:
    what to take back from the items that stay, the content keys the tombstone lists, and
    the kept replies whose extraction read a purged question."""

    undo: purge_undo.Undo
    keys: list[str]
    readers: list[int]
    redigest: list[int] = field(default_factory=list)
    """Kept sessions whose digest goes: queued to be digested again from the turns left."""


def prepare(conn: Connection, target: Target) -> Work:
    """Read (inside the purge's transaction, before anything is erased) what the erase of
    ``target`` involves beyond its rows (see `Work`); both stores' purges call it."""
    profile = target.profile
    if target.what == "profile":
        keyed = keys_of(conn, profile)
        every = {
            k
            for table in (keyed.sessions, keyed.turns, keyed.items, keyed.events, keyed.digests)
            for k in table.values()
        }
        every.update(kb_keys(conn, profile))
        return Work(purge_undo.Undo(), sorted(every), [])
    undo = purge_undo.prepare(
        conn, profile=profile, turns=target.turns, items=target.items, events=target.events
    )
    own_events = _in(conn, "SELECT id FROM memory_events WHERE item_id IN ({ids}) "
                     "AND profile = ?", target.items, profile)  # fmt: skip
    keys = keys_for(
        conn,
        profile,
        turns=target.turns,
        sessions=target.sessions_emptied,
        items=target.items,
        digests=target.digests,
        events=[*own_events, *undo.erased, *undo.reworded],
    )
    kept = [s for s in target.sessions_touched if s not in target.sessions_emptied]
    digested = _in(conn, "SELECT session_id FROM digests WHERE id IN ({ids}) AND profile = ?",
                   target.digests, profile)  # fmt: skip
    return Work(
        undo,
        keys,
        purge_undo.readers(conn, profile, kept, target.turns),
        sorted(set(digested) & set(kept)),
    )


def requeue(conn: Connection, profile: str, work: Work, ts: str) -> None:
    """Queue the digest job of each kept session whose digest the purge erased (its old job
    is erased with it), so the digest is written again from the turns left."""
    for session_id in work.redigest:
        conn.execute(
            "INSERT INTO jobs(profile, kind, ref_id, created_at, updated_at) "
            "VALUES (?, 'digest', ?, ?, ?)",
            (profile, session_id, ts, ts),
        )


def _touched(target: Target, counts: dict[str, int]) -> list[str]:
    """The tables whose rows were erased (or whose rows' links to erased rows were
    cleared): what the compaction rewrites."""
    tables = [name for name in ("turns", "digests", "jobs", "kb_chunks", "kb_documents")
              if counts.get(name)]  # fmt: skip
    if target.items or target.turns:
        tables += ["memory_items", "memory_events"]
    if counts.get("sessions") or target.sessions_touched:
        tables.append("sessions")
    return tables


def _erase(
    conn: Connection, purging: Purging, target: Target, work: Work, ts: str
) -> dict[str, int]:
    """Take back what the target did to the items that stay (`purge_undo`), then delete the
    target's rows (every statement limited to its profile) with their search entries;
    rows erased per kind (a kind with nothing to erase is left out)."""
    profile = target.profile
    counts = purge_undo.apply(conn, work.undo, profile=profile, ts=ts)

    def run(sql: str, ids: Sequence[int], key: str | None = None) -> None:
        if not ids:
            return
        n = 0
        for chunk in _chunks(ids):
            marks = ",".join("?" * len(chunk))
            n += max(conn.execute(sql.format(ids=marks), (profile, *chunk)).rowcount, 0)
        if key:
            counts[key] = counts.get(key, 0) + n

    items, turns = target.items, target.turns
    purging.forget(
        turns=turns,
        items=items,
        digests=target.digests,
        knowledge_of=profile if target.what == "profile" else None,
    )
    # Links from rows that stay to rows that go become NULL (ids only, never content).
    run("UPDATE memory_events SET related_item_id = NULL "
        "WHERE profile = ? AND related_item_id IN ({ids})", items)  # fmt: skip
    run("UPDATE memory_events SET source_turn_id = NULL "
        "WHERE profile = ? AND source_turn_id IN ({ids})", turns)  # fmt: skip
    run("UPDATE memory_items SET superseded_by = NULL "
        "WHERE profile = ? AND superseded_by IN ({ids})", items)  # fmt: skip
    run("UPDATE memory_items SET conflict_with = NULL "
        "WHERE profile = ? AND conflict_with IN ({ids})", items)  # fmt: skip
    run("DELETE FROM memory_events WHERE profile = ? AND item_id IN ({ids})", items,
        "memory_events")  # fmt: skip
    run("DELETE FROM memory_items WHERE profile = ? AND id IN ({ids})", items, "memory_items")
    run("DELETE FROM digests WHERE profile = ? AND id IN ({ids})", target.digests, "digests")
    run("DELETE FROM jobs WHERE profile = ? AND kind = 'extract' AND ref_id IN ({ids})",
        [*turns, *work.readers], "jobs")  # fmt: skip
    # The digest of a session that keeps some turns is written again from what is left.
    run("DELETE FROM jobs WHERE profile = ? AND kind = 'digest' AND ref_id IN ({ids})",
        target.sessions_touched, "jobs")  # fmt: skip
    run("DELETE FROM turns WHERE profile = ? AND id IN ({ids})", turns, "turns")
    run("DELETE FROM sessions WHERE profile = ? AND id IN ({ids})", target.sessions_emptied,
        "sessions")  # fmt: skip
    requeue(conn, profile, work, ts)
    for session_id in sorted(set(target.sessions_touched) - set(target.sessions_emptied)):
        conn.execute(
            "UPDATE sessions SET turns = (SELECT count(*) FROM turns WHERE session_id = ? "
            "AND profile = ?), last_turn_at = coalesce((SELECT max(ts) FROM turns "
            "WHERE session_id = ? AND profile = ?), last_turn_at), started_at = "
            "coalesce((SELECT min(ts) FROM turns WHERE session_id = ? AND profile = ?), "
            "started_at) WHERE id = ? AND profile = ?",
            (session_id, profile) * 4,
        )
    if target.what == "profile":
        for table in ("jobs", "kb_chunks", "kb_documents"):
            n = conn.execute(f"DELETE FROM {table} WHERE profile = ?", (profile,)).rowcount
            counts[table] = counts.get(table, 0) + max(n, 0)
    purging.settle()
    return counts


def purge(conn: Connection, target: Target, *, now: datetime) -> Purged:
    """Erase ``target`` (from `plan`) in one transaction, leave a tombstone, then have the
    store rewrite what still holds the erased bytes (`api.Purging.compact`: the SQLite file
    VACUUMed and its WAL truncated; PostgreSQL's touched tables rewritten). ``now`` dates
    the tombstone.

    The connection must not be inside a transaction, and a store bound to one tenant must
    be bound to the target's profile: InvalidInput otherwise. Raises StoreError (Busy,
    Integrity...) if the database refuses the erase (nothing is erased then); a compaction
    that cannot complete because another process holds the store is reported in the result
    (``vacuumed``, ``not_rewritten``, ``note``), never raised.
    """
    ref = "profile" if target.what == "profile" else f"{target.what} #{target.ref_id}"
    with conn.store.purging(target.profile, ref) as purging:
        work = prepare(conn, target)
        counts = _erase(conn, purging, target, work, to_stored(now))
        crash.reach("purge.erase")
        purging.guard_again()
        tombstone(conn, target, counts, work.keys, now)
    done = Purged(target.what, ref, counts)
    hotcache.written(target.profile)
    crash.reach("purge.vacuum")
    compaction = purging.compact(_touched(target, counts))
    done.vacuumed, done.wal_truncated = compaction.vacuumed, compaction.wal_truncated
    done.not_rewritten, done.note = compaction.not_rewritten, compaction.note
    return done


def tombstone(
    conn: Connection, target: Target, counts: dict[str, int], keys: list[str],
    now: datetime,
) -> None:  # fmt: skip
    """Write the purge's tombstone (inside its transaction): what, when, counts, and the
    content keys of what was erased (`Work.keys`)."""
    conn.execute(
        "INSERT INTO purges(profile, ts, what, ref_id, counts, keys) VALUES (?, ?, ?, ?, ?, ?)",
        (target.profile, to_stored(now), target.what, target.ref_id, json.dumps(counts),
         json.dumps(keys)),
    )  # fmt: skip


def tombstones(conn: Connection, profile: str) -> list[dict[str, object]]:
    """The profile's purge tombstones, oldest first: ``{id, ts, what, ref_id, counts}``."""
    rows = conn.execute(
        "SELECT id, ts, what, ref_id, counts FROM purges WHERE profile = ? ORDER BY id",
        (profile,),
    ).fetchall()
    return [
        {"id": r[0], "ts": r[1], "what": r[2], "ref_id": r[3], "counts": json.loads(r[4])}
        for r in rows
    ]
