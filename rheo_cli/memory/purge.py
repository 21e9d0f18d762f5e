"""`purge`: the one deliberate erase of a turn, a session, a memory item or a whole profile.

Everything else in rheo keeps history (forgetting a memory retracts it; the ledger refuses
UPDATE and DELETE). A purge removes the content for good: the rows, their entries in the FTS5
indexes, what was derived from them (memory items learnt from a purged turn, the digest of its
session, their jobs), and then the bytes — with ``secure_delete`` on, freed space is zeroed,
the FTS indexes are merged so no old segment keeps a term, the file is VACUUMed and the WAL
checkpointed and truncated. What the purged turns did to the memory items that stay (a fact
they replaced, an open item they closed, a reinforcement) is undone and the history events
that quote them are erased (`purge_undo` says exactly what counts as learnt from them). A
tombstone in ``purges`` says what was erased and when, never the content: only the content
keys of the erased records (`archive.keys`), by which an import of an older export leaves
them out. The append-only guards stand aside only while the purge's own transaction holds a
row in ``purge_grant`` (migration 9), removed again before it commits. On PostgreSQL the
same `plan` is erased by `pg_purge`. Either way the Redis hot cache, if installed, is dropped.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from . import purge_undo
from .archive.keys import keys_for, keys_of
from .facts import hotcache
from .kb.transfer import keys as kb_keys
from .store import crash, health
from .store.db import write
from .store.errors import InvalidInput, NotFound
from .store.migrations import CJK_GLOB
from .store.pg import dialect
from .store.timeutil import to_stored

WHATS = ("turn", "session", "memory", "profile")


@dataclass
class Purged:
    """What a purge erased: ``counts`` of rows per kind (turns, sessions, memory_items,
    memory_events, digests, jobs) and whether the file was compacted (VACUUM) and its WAL
    emptied."""

    what: str
    ref: str
    counts: dict[str, int] = field(default_factory=dict)
    vacuumed: bool = False
    wal_truncated: bool = False
    not_rewritten: list[str] = field(default_factory=list)
    """On PostgreSQL: touched tables that could not be rewritten (VACUUM FULL) yet."""


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
        parts = [f"{len(self.turns)} turn(s)"]
        if self.items:
            parts.append(f"{len(self.items)} memory item(s)")
        if self.digests:
            parts.append(f"{len(self.digests)} digest(s)")
        head = (
            f"profile {self.profile!r}" if self.what == "profile" else f"{self.what} #{self.ref_id}"
        )
        return f"{head}: {', '.join(parts)}"


def _chunks(ids: Sequence[int], size: int = 500) -> Iterator[list[int]]:
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


def _ids(conn: sqlite3.Connection, sql: str, args: Iterable[object]) -> list[int]:
    return [int(r[0]) for r in conn.execute(sql, tuple(args)).fetchall()]


def _in(conn: sqlite3.Connection, sql: str, ids: Sequence[int], *extra: object) -> list[int]:
    """Run ``sql`` (holding one ``{ids}`` placeholder list) over ``ids`` in chunks."""
    out: list[int] = []
    for chunk in _chunks(ids):
        marks = ",".join("?" * len(chunk))
        out += _ids(conn, sql.format(ids=marks), [*chunk, *extra])
    return out


def plan(conn: sqlite3.Connection, *, profile: str, what: str, ref_id: int | None) -> Target:
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


def prepare(conn: sqlite3.Connection, target: Target) -> Work:
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


def requeue(conn: sqlite3.Connection, profile: str, work: Work, ts: str) -> None:
    """Queue the digest job of each kept session whose digest the purge erased (its old job
    is erased with it), so the digest is written again from the turns left."""
    for session_id in work.redigest:
        conn.execute(
            "INSERT INTO jobs(profile, kind, ref_id, created_at, updated_at) "
            "VALUES (?, 'digest', ?, ?, ?)",
            (profile, session_id, ts, ts),
        )


def _fts_forget(conn: sqlite3.Connection, target: Target) -> bool:
    """Remove the target's rows from the external-content FTS5 indexes (which need the exact
    indexed values to delete an entry), in a savepoint. False (nothing done) when an index is
    damaged or missing: the caller then rebuilds every index from the rows left."""
    try:
        with write(conn):
            _fts_delete(conn, target)
    except health.DAMAGE as exc:
        if not health.may_be_an_index(exc):
            raise
        return False
    return True


def _fts_delete(conn: sqlite3.Connection, target: Target) -> None:
    for chunk in _chunks(target.turns):
        marks = ",".join("?" * len(chunk))
        conn.execute(
            "INSERT INTO turns_fts(turns_fts, rowid, content, tenant) "
            f"SELECT 'delete', id, content, tenant FROM turns WHERE id IN ({marks})",
            chunk,
        )
        conn.execute(
            "INSERT INTO turns_cjk(turns_cjk, rowid, content) "
            f"SELECT 'delete', id, content FROM turns WHERE id IN ({marks}) "
            f"AND content GLOB '{CJK_GLOB}'",
            chunk,
        )
    for chunk in _chunks(target.items):
        marks = ",".join("?" * len(chunk))
        conn.execute(
            "INSERT INTO memory_items_fts(memory_items_fts, rowid, topic, label, properties) "
            "SELECT 'delete', id, topic, label, properties FROM memory_items "
            f"WHERE id IN ({marks})",
            chunk,
        )
    for chunk in _chunks(target.digests):
        marks = ",".join("?" * len(chunk))
        conn.execute(
            "INSERT INTO digests_fts(digests_fts, rowid, narrative, decisions) "
            f"SELECT 'delete', id, narrative, decisions FROM digests WHERE id IN ({marks})",
            chunk,
        )
    if target.what == "profile":
        conn.execute(
            "INSERT INTO kb_chunks_fts(kb_chunks_fts, rowid, heading, content) "
            "SELECT 'delete', id, heading, content FROM kb_chunks WHERE profile = ?",
            (target.profile,),
        )


def _erase(conn: sqlite3.Connection, target: Target, work: Work, ts: str) -> dict[str, int]:
    counts = purge_undo.apply(conn, work.undo, profile=target.profile, ts=ts)

    def run(sql: str, ids: Sequence[int], key: str | None = None) -> None:
        n = 0
        for chunk in _chunks(ids):
            n += conn.execute(sql.format(ids=",".join("?" * len(chunk))), chunk).rowcount
        if key:
            counts[key] = counts.get(key, 0) + n

    indexed = _fts_forget(conn, target)
    items, turns = target.items, target.turns
    # Links from rows that stay to rows that go become NULL (ids only, never content).
    run("UPDATE memory_events SET related_item_id = NULL WHERE related_item_id IN ({ids})", items)
    run("UPDATE memory_events SET source_turn_id = NULL WHERE source_turn_id IN ({ids})", turns)
    run("UPDATE memory_items SET superseded_by = NULL WHERE superseded_by IN ({ids})", items)
    run("UPDATE memory_items SET conflict_with = NULL WHERE conflict_with IN ({ids})", items)
    run("DELETE FROM memory_events WHERE item_id IN ({ids})", items, "memory_events")
    run("DELETE FROM memory_items WHERE id IN ({ids})", items, "memory_items")
    run("DELETE FROM digests WHERE id IN ({ids})", target.digests, "digests")
    run(
        "DELETE FROM jobs WHERE kind = 'extract' AND ref_id IN ({ids})",
        [*turns, *work.readers],
        "jobs",
    )
    # The digest of a session that keeps some turns is written again from what is left.
    run("DELETE FROM jobs WHERE kind = 'digest' AND ref_id IN ({ids})", target.sessions_touched,
        "jobs")  # fmt: skip
    run("DELETE FROM turns WHERE id IN ({ids})", turns, "turns")
    run("DELETE FROM sessions WHERE id IN ({ids})", target.sessions_emptied, "sessions")
    requeue(conn, target.profile, work, ts)
    for session_id in set(target.sessions_touched) - set(target.sessions_emptied):
        conn.execute(
            "UPDATE sessions SET turns = (SELECT count(*) FROM turns WHERE session_id = ?), "
            "last_turn_at = coalesce((SELECT max(ts) FROM turns WHERE session_id = ?), "
            "last_turn_at), started_at = coalesce((SELECT min(ts) FROM turns "
            "WHERE session_id = ?), started_at) WHERE id = ?",
            (session_id, session_id, session_id, session_id),
        )
    if target.what == "profile":
        counts["jobs"] = (
            counts.get("jobs", 0)
            + conn.execute("DELETE FROM jobs WHERE profile = ?", (target.profile,)).rowcount
        )
        counts["kb_chunks"] = conn.execute(
            "DELETE FROM kb_chunks WHERE profile = ?", (target.profile,)
        ).rowcount
        counts["kb_documents"] = conn.execute(
            "DELETE FROM kb_documents WHERE profile = ?", (target.profile,)
        ).rowcount
    # Merge each index into one segment: entries deleted above leave no old segment behind
    # that still holds their terms. A damaged index is rebuilt from the rows left instead,
    # which holds nothing purged either.
    if indexed:
        try:
            with write(conn):
                for index in health.FTS_INDEXES:
                    conn.execute(f"INSERT INTO {index}({index}) VALUES ('optimize')")
        except health.DAMAGE as exc:
            if not health.may_be_an_index(exc):
                raise
            indexed = False
    if not indexed:
        health.rebuild_indexes(conn)
    return counts


def purge(conn: sqlite3.Connection, target: Target, *, now: datetime) -> Purged:
    """Erase ``target`` (from `plan`) in one transaction, leave a tombstone, then rewrite the
    file so the text is gone from it: VACUUM (with ``secure_delete`` on) and a WAL checkpoint
    that truncates the -wal file. ``now`` dates the tombstone.

    The connection must not be inside a transaction. Raises sqlite3.Error if the database
    cannot be written (nothing is erased then); a VACUUM or checkpoint that cannot complete
    because another process holds the database is reported in the result, not raised.
    On PostgreSQL `pg_purge.purge` does it (VACUUM FULL of the touched tables).
    """
    if dialect(conn) == "postgres":
        from . import pg_purge

        done = pg_purge.purge(conn, target, now=now)
        hotcache.written(target.profile)
        return done
    if conn.in_transaction:
        raise InvalidInput("purge runs in its own transaction")
    ref = "profile" if target.what == "profile" else f"{target.what} #{target.ref_id}"
    previous = int(conn.execute("PRAGMA secure_delete").fetchone()[0])
    conn.execute("PRAGMA secure_delete = ON")
    try:
        with write(conn):
            conn.execute("INSERT INTO purge_grant(on_, reason) VALUES (1, ?)", (ref,))
            work = prepare(conn, target)
            counts = _erase(conn, target, work, to_stored(now))
            crash.reach("purge.erase")
            conn.execute("DELETE FROM purge_grant")
            tombstone(conn, target, counts, work.keys, now)
        done = Purged(target.what, ref, counts)
        hotcache.written(target.profile)
        crash.reach("purge.vacuum")
        try:
            conn.execute("VACUUM")
            done.vacuumed = True
        except sqlite3.OperationalError:
            pass  # another process is reading: freed pages are zeroed (secure_delete) anyway
        row = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        done.wal_truncated = row is not None and int(row[0]) == 0
        return done
    finally:
        conn.execute(f"PRAGMA secure_delete = {previous}")


def tombstone(
    conn: sqlite3.Connection, target: Target, counts: dict[str, int], keys: list[str],
    now: datetime,
) -> None:  # fmt: skip
    """Write the purge's tombstone (inside its transaction): what, when, counts, and the
    content keys of what was erased (`Work.keys`)."""
    conn.execute(
        "INSERT INTO purges(profile, ts, what, ref_id, counts, keys) VALUES (?, ?, ?, ?, ?, ?)",
        (target.profile, to_stored(now), target.what, target.ref_id, json.dumps(counts),
         json.dumps(keys)),
    )  # fmt: skip


def tombstones(conn: sqlite3.Connection, profile: str) -> list[dict[str, object]]:
    """The profile's purge tombstones, oldest first: ``{id, ts, what, ref_id, counts}``."""
    rows = conn.execute(
        "SELECT id, ts, what, ref_id, counts FROM purges WHERE profile = ? ORDER BY id",
        (profile,),
    ).fetchall()
    return [
        {"id": r[0], "ts": r[1], "what": r[2], "ref_id": r[3], "counts": json.loads(r[4])}
        for r in rows
    ]
