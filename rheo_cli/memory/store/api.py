"""The store's interface: what the engine and the front ends may ask of a store, whichever
database holds it.

`open` (in `store`) chooses the implementation once, from the location it is given — a file
path for `sqlite.SqliteStore`, a ``postgresql://`` URL for `postgres.PostgresStore` — and
returns a `Store`. Everything else asks that object; nothing outside ``store/sqlite/`` and
``store/postgres/`` knows which database it is (``tests/test_architecture.py`` holds it).

What a store offers, in one place:

- ``conn``, a `Connection`: the engine's plain SQL in the subset both databases run
  (``?`` parameters, ``INSERT OR IGNORE``, ``RETURNING``, ``coalesce``, window functions...),
  rows readable by index and by column name;
- transactions with a bounded wait (`write`, `tentative`, `snapshot`): a writer waits at most
  `BUSY_TIMEOUT_S` per try for another's lock, on both databases, then gets `Busy`;
- the few queries whose text differs (ranked ids for turns, memory items, digests and
  knowledge chunks; text without spaces; job claims; a bulk load's indexing);
- purge and compaction, backup, health (``rheo doctor``), scope (the tenant);
- rheo's own errors (`errors`): a driver's exception never crosses this interface.

The shape follows basic-memory's search repository: this base class holds the logic both
stores share and delegates the rest to hooks each implementation fills, and each dialect's
query text lives in its own module (``sqlite/search.py``, ``postgres/search.py``).
"""

from __future__ import annotations

import contextlib
import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Protocol, TypeVar

from .errors import Busy, DatabaseError, InvalidInput

BUSY_TIMEOUT_S = 30.0
"""How long (seconds) one try at the write lock waits for another process's before `Busy`,
on both stores (SQLite's ``busy_timeout``, PostgreSQL's ``lock_timeout``)."""

LOCK_ATTEMPTS = 4
"""Tries at taking the write lock; each waits up to `BUSY_TIMEOUT_S` (120 s in all)."""

T = TypeVar("T")
K = TypeVar("K")


class Row(Protocol):
    """A result row: readable by index (``row[0]``) and by column name (``row["id"]``)."""

    def __getitem__(self, key: Any, /) -> Any: ...

    def keys(self) -> list[str]: ...


class Cursor(Protocol):
    """What the engine uses of a cursor: ``lastrowid`` after a one-row insert into a table
    with an id, ``rowcount`` after a change, rows as `Row` (plain tuples once ``row_factory``
    is set to None)."""

    row_factory: Any

    @property
    def lastrowid(self) -> int | None: ...

    @property
    def rowcount(self) -> int: ...

    @property
    def description(self) -> Any: ...

    def execute(self, sql: str, params: Any = ..., /) -> Cursor: ...

    def executemany(self, sql: str, seq: Iterable[Any], /) -> Cursor: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def fetchmany(self, size: int = ..., /) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...

    def close(self) -> None: ...


class Connection(Protocol):
    """What the engine uses of a connection: statements with ``?`` parameters, cursors,
    whether a transaction is open, and the `Store` it belongs to (for everything that is not
    plain SQL). Autocommit outside transactions; transactions come from `Store.write`."""

    @property
    def store(self) -> Store: ...

    @property
    def in_transaction(self) -> bool: ...

    def execute(self, sql: str, params: Any = ..., /) -> Cursor: ...

    def executemany(self, sql: str, seq: Iterable[Any], /) -> Cursor: ...

    def cursor(self) -> Cursor: ...

    def close(self) -> None: ...


@dataclass
class Check:
    """One check of ``rheo doctor``: ``ok`` False is a problem; ``detail`` is one line."""

    name: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        """``{"name", "ok", "detail"}``."""
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


@dataclass
class Health:
    """What `Store.health` found: its checks in order, the repairs it made (one line each),
    and whether the store can be read for the engine's own checks (sessions, jobs): False
    when its tables are missing or it has none yet."""

    checks: list[Check] = field(default_factory=list)
    repaired: list[str] = field(default_factory=list)
    usable: bool = True
    writable: bool = True
    """False when the store cannot be written: the engine's checks then repair nothing."""


@dataclass
class Compaction:
    """What a purge's compaction did: ``vacuumed`` every touched table or the whole file
    rewritten without the erased rows' bytes; ``wal_truncated`` the write-ahead log emptied
    (SQLite's -wal file; never on a server, whose log is its own); ``not_rewritten`` the
    tables whose files may still hold the text (None where the store compacts a whole file);
    ``note`` one line for the person when something is left to do, else None."""

    vacuumed: bool = False
    wal_truncated: bool = False
    not_rewritten: list[str] | None = None
    note: str | None = None


class Purging(ABC):
    """A purge's write transaction, from `Store.purging`: inside it the append-only guards
    stand aside for the purged profile's rows, until `guard_again`; after it, `compact`.
    The engine erases the rows itself (plain SQL), between `forget` and `settle`."""

    def forget(
        self, *, turns: Sequence[int], items: Sequence[int], digests: Sequence[int],
        knowledge_of: str | None,
    ) -> None:  # fmt: skip
        """Before the rows go: take them out of search indexes kept apart from the tables
        (``knowledge_of``: the profile whose whole knowledge base goes). Nothing to do where
        the index lives in the rows."""
        return None

    def settle(self) -> None:
        """After the rows went: leave no part of a search index holding an erased word."""
        return None

    @abstractmethod
    def guard_again(self) -> None:
        """Put the guards back, inside the transaction (before writing the tombstone)."""

    @abstractmethod
    def compact(self, tables: Sequence[str]) -> Compaction:
        """After the commit: rewrite what holds the erased rows' bytes (``tables``: those
        the purge touched). Never raises for a lock or a missing right: reported."""


@dataclass(frozen=True)
class Grant:
    """One login role's grant of one profile (``granted_at``: stored UTC time)."""

    member: str
    profile: str
    granted_at: str

    def to_json(self) -> dict[str, str]:
        """``{"role": ..., "profile": ..., "granted_at": ...}``."""
        return {"role": self.member, "profile": self.profile, "granted_at": self.granted_at}


@dataclass
class Logins:
    """Who may act for which profile (`Store.logins`): the connection's ``login``, the
    ``owner`` of rheo's tables (None before the grants existed), whether the login is the
    owner (it may act for every profile and grant them), and the ``grants`` it may see
    (every one for the owner, a member's own for a member)."""

    login: str
    owner: str | None
    is_owner: bool
    grants: list[Grant] = field(default_factory=list)


NO_LOGINS = (
    "team logins need memory on PostgreSQL (set RHEO_DATABASE_URL); a SQLite store belongs "
    "to whoever can read its file"
)
"""Said when a team command is run on a store without logins of its own."""


class Store(ABC):
    """An open store (see the module docstring). ``kind`` names the implementation
    (``"sqlite"``, ``"postgres"``) for messages and tests, never for branching: what differs
    is asked of the store itself."""

    kind: ClassVar[str]
    serves_one_tenant: ClassVar[bool]
    """True when a connection sees one profile only (PostgreSQL's row-level security): a
    worker serves that profile, an export of every profile is refused, a backup is the
    tenant's records. False when one store serves every profile (the SQLite file)."""
    server_keeps_copies: ClassVar[bool]
    """True when the database's server keeps copies rheo cannot erase (its own backups,
    archived write-ahead log, replicas): a purge says so."""
    refuses_nul: ClassVar[bool]
    has_logins: ClassVar[bool] = False
    """True when the database has logins of its own that profiles are granted to (a team's
    members on PostgreSQL: `grant`, `revoke`, `logins`); False for a file, whose reader has
    it all."""
    """True when text cannot hold the NUL character (PostgreSQL)."""
    extra: ClassVar[str | None] = None
    """The optional dependencies (rheo's extra, ``pip install 'rheo[NAME]'``) the store's
    driver comes from; None for the standard library's."""
    extra_for: ClassVar[str] = ""
    """What the extra is needed for, said to a person who lacks it."""

    conn: Connection
    location: str
    """Where the store is, fit to show (a file path, a URL with its password hidden)."""
    tenant: str | None
    """The profile the connection is bound to (None: unbound)."""

    repair_notices: list[Callable[[str], None]]
    """Called with one line whenever a write mended a damaged search index to go through (a
    front end shows it); the engine itself prints nothing."""

    # --- scope ---------------------------------------------------------------------------

    @property
    def scope(self) -> str | None:
        """The one profile this store shows (its tenant), or None when it serves every
        profile (queries then filter by profile themselves, as they always do)."""
        return self.tenant if self.serves_one_tenant else None

    def set_tenant(self, profile: str) -> None:
        """Bind the store to ``profile`` (from configuration, never from model output).
        Outside a transaction only."""
        self.tenant = profile

    def act_as(self, profile: str) -> None:
        """Inside a write transaction: write as ``profile`` until it ends (an import writes
        each profile its file names). Nothing to do where one store serves every profile."""
        return None

    def tenant_groups(
        self, records: Iterable[T], profile_of: Callable[[T], Any]
    ) -> Iterator[list[T] | Iterator[T]]:
        """``records`` in the groups they are written in, inside a write transaction: where
        one store serves every profile, one group of them all; where a connection sees one
        tenant, each run of one profile's records, written as that tenant (`act_as`)."""
        if not self.serves_one_tenant:
            yield iter(records)
            return
        for profile, group in itertools.groupby(records, key=profile_of):
            if isinstance(profile, str) and profile:
                self.act_as(profile)
            yield group

    # --- team logins ---------------------------------------------------------------------

    def grant(self, member: str, profile: str, *, now: datetime) -> bool:
        """Let the login role ``member`` act for ``profile`` (run by the owner of rheo's
        tables; ``now`` dates the grant). False when it already could.
        Raises InvalidInput where the store has no logins of its own (`NO_LOGINS`), for a
        login that is not the owner or a bad profile name; NotFound for no such role."""
        raise InvalidInput(NO_LOGINS)

    def revoke(self, member: str, profile: str) -> bool:
        """Take ``profile`` back from ``member`` (run by the owner); False when it had no
        such grant. Raises InvalidInput as `grant` does."""
        raise InvalidInput(NO_LOGINS)

    def logins(self) -> Logins:
        """Who may act for which profile (`Logins`). Raises InvalidInput where the store has
        no logins of its own (`NO_LOGINS`)."""
        raise InvalidInput(NO_LOGINS)

    # --- opening and closing -------------------------------------------------------------

    @classmethod
    def shown(cls, location: str) -> str:
        """``location`` fit to show a person (a URL's password hidden), without opening."""
        return location

    @abstractmethod
    def open_again(self) -> Store:
        """Another store at the same place for the same tenant, with its own connection
        (for another thread), not migrated. Raises StoreError when it cannot be opened."""

    def refresh(self) -> str | None:
        """When something under this process changed how the store must be open (SQLite's
        -wal file removed), put it right and reopen; returns the note saying so, else None.
        Cheap (a stat at most)."""
        return None

    def close(self) -> None:
        """Close the connection (an open transaction is rolled back)."""
        self.conn.close()

    # --- transactions --------------------------------------------------------------------

    @abstractmethod
    def set_wait(self, seconds: float) -> None:
        """From now on, one try at the write lock waits ``seconds`` for another process's
        (the store opens with `BUSY_TIMEOUT_S`). Outside a transaction."""

    @abstractmethod
    def _begin(self, wait_s: float | None) -> None:
        """Open a write transaction holding the store's write lock (one writer at a time:
        a read-then-write cannot interleave with another's), waiting at most ``wait_s``
        seconds for it (None: `BUSY_TIMEOUT_S`). Raises Busy when the wait ran out (no
        transaction is left open)."""

    def _commit(self) -> None:
        self.conn.execute("COMMIT")

    def _rollback(self) -> None:
        self.conn.execute("ROLLBACK")

    def _begin_retrying(self, attempts: int, wait_s: float | None) -> None:
        for attempt in range(attempts):
            try:
                self._begin(wait_s)
                return
            except Busy:
                if attempt == attempts - 1:
                    raise

    def _undo(self, *statements: str | None) -> None:
        """Roll back without letting the rollback's own failure hide the error that caused
        it (None: the transaction's rollback hook)."""
        for statement in statements:
            with contextlib.suppress(DatabaseError):
                if statement is None:
                    self._rollback()
                else:
                    self.conn.execute(statement)

    _savepoints = itertools.count(1)

    @contextlib.contextmanager
    def write(
        self, *, attempts: int = LOCK_ATTEMPTS, wait_s: float | None = None
    ) -> Iterator[Connection]:
        """A write transaction, committed at the end and rolled back on any exception.

        The write lock is taken at the start, so read-then-write sequences (session
        detection, reinforcement) cannot interleave with another process's; while another
        holds it the start is tried ``attempts`` times, each waiting ``wait_s`` seconds
        (None: `BUSY_TIMEOUT_S`), then Busy is raised. Nested use opens a SAVEPOINT inside
        the outer transaction: an exception undoes only the inner block's writes, and the
        outer transaction decides what is committed. The original exception is always the
        one raised, never an error from the rollback."""
        conn = self.conn
        if conn.in_transaction:
            name = f"rheo_{next(self._savepoints)}"
            conn.execute(f"SAVEPOINT {name}")
            try:
                yield conn
            except BaseException:
                self._undo(f"ROLLBACK TO {name}", f"RELEASE {name}")
                raise
            conn.execute(f"RELEASE {name}")
            return
        self._begin_retrying(attempts, wait_s)
        try:
            yield conn
            self._commit()
        except BaseException:
            if conn.in_transaction:
                self._undo(None)
            raise

    @contextlib.contextmanager
    def tentative(self) -> Iterator[Connection]:
        """A write transaction that is always rolled back: what the writes inside it would
        do is visible inside, and nothing of it outside, ever (``rheo context`` stores the
        message this way to build exactly the request ``rheo ask`` would send). Raises
        RuntimeError inside another transaction, whose writes it would discard."""
        if self.conn.in_transaction:
            raise RuntimeError("a tentative write cannot run inside another transaction")
        self._begin_retrying(LOCK_ATTEMPTS, None)
        try:
            yield self.conn
        finally:
            self._undo(None)

    @abstractmethod
    def _begin_snapshot(self) -> None:
        """Open a read transaction and take its snapshot."""

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[Connection]:
        """A read transaction: every query inside sees one consistent state of the store
        (an export or a backup reads from it while others write)."""
        self._begin_snapshot()
        try:
            yield self.conn
        finally:
            self._undo(None)

    # --- search: each implementation's query text in its own module ----------------------
    #
    # ``terms`` are FTS5-safe strings from `text.fts.terms` (``"word"``, ``"two words"``,
    # ``"pre"*``) on both stores; every query names ``profile`` (a store that serves one
    # tenant is held to it by the database as well). Scores follow FTS5: lower is better.

    @abstractmethod
    def turn_ids(
        self,
        profile: str,
        terms: list[str],
        *,
        any_term: bool,
        newer_than: int | None,
        up_to: int | None,
        limit: int,
    ) -> list[int]:
        """Ids of ``profile``'s turns matching ``terms`` (any of them, or all), newest
        first, with id > ``newer_than`` and id <= ``up_to`` where given, at most ``limit``
        (the engine ranks them itself, `ledger.turns.search_turns`)."""

    @abstractmethod
    def term_turn_ids(self, profile: str, term: str, cap: int) -> list[int]:
        """Ids of ``profile``'s turns holding ``term`` (its postings), at most ``cap``."""

    @abstractmethod
    def newest_turn_ids(self, profile: str, terms: list[str], limit: int) -> list[int]:
        """Ids of ``profile``'s newest ``limit`` turns holding any of ``terms``, newest
        first."""

    @abstractmethod
    def cjk_turn_ids(self, profile: str, run: str, limit: int) -> list[int]:
        """Ids of ``profile``'s turns containing ``run`` (three or more characters of a
        script written without spaces; the trigram index), newest first."""

    @abstractmethod
    def trigram_turns(self, profile: str, columns: str, grams: list[str], limit: int) -> list[Any]:
        """Turns written without spaces holding any of ``grams`` (three-character pieces
        of the message), best first: ``columns`` of ``turns t`` plus ``rank``."""

    @abstractmethod
    def item_source_turns(self, profile: str, terms: list[str], limit: int) -> list[Any]:
        """``(tid, rank)`` of memory items matching any of ``terms`` (not retracted, with a
        source turn), best first by bm25."""

    @abstractmethod
    def search_items(
        self,
        profile: str,
        terms: list[str],
        *,
        any_term: bool,
        statuses: tuple[str, ...] | None,
        limit: int,
        view: tuple[str, list[Any]] = ("", []),
    ) -> list[Any]:
        """Memory items (every column plus ``score``) matching ``terms``, best first by
        bm25; ``view`` an extra ``(" AND ...", args)`` condition on ``m`` (an assistant's
        view of memory)."""

    @abstractmethod
    def search_digests(self, profile: str, terms: list[str], limit: int) -> list[Any]:
        """Digests (every column plus ``rank``) whose narrative or decisions match any
        term, best first by bm25."""

    @abstractmethod
    def search_chunks(
        self, profile: str, terms: list[str], *, any_term: bool, limit: int
    ) -> list[Any]:
        """Active knowledge-base chunks matching ``terms`` (``id, document_id, source,
        title, version, heading, content, score``), best first by bm25 with the heading
        weighted twice the body."""

    @abstractmethod
    def plain_turn_ids(self, profile: str, terms: list[str], limit: int) -> list[int]:
        """Ids of ``profile``'s best ``limit`` turns holding any of ``terms`` by plain bm25
        over every match (the benchmarks' yardstick, `retrieval.baseline`), best first."""

    def _unindexed(self, column: str) -> str:
        """``column`` written so the planner does not pick its index (hook)."""
        return column

    def superseded_sources(self, profile: str, turn_ids: Sequence[int]) -> list[Any]:
        """``(id, source_turn_id, superseded_by)`` of ``profile``'s superseded items learnt from
        ``turn_ids``, by item id: through the source-turn index (a profile has few items per
        turn, but may have thousands of superseded ones)."""
        marks = ",".join("?" * len(turn_ids))
        profile_col, status_col = self._unindexed("profile"), self._unindexed("status")
        return self.conn.execute(
            f"SELECT id, source_turn_id, superseded_by FROM memory_items WHERE {profile_col} = ? "
            f"AND source_turn_id IN ({marks}) AND {status_col} = 'superseded' "
            "AND superseded_by IS NOT NULL ORDER BY id",
            (profile, *turn_ids),
        ).fetchall()

    # --- jobs ------------------------------------------------------------------------------

    _row_lock: ClassVar[str] = ""
    """What a claim adds to its read so another worker's claim in flight is passed over."""

    def claimable_jobs(self, wall_now: float, profile: str | None) -> list[Any]:
        """Inside the claim's write transaction: jobs pending and due at ``wall_now`` (Unix
        seconds; ``inf``: every pending one) or running (their lease is the caller's to
        judge), of ``profile`` (None: every profile the store shows), oldest first, rows
        another worker is claiming passed over."""
        sql = (
            "SELECT * FROM jobs WHERE (status = 'pending' AND (not_before IS NULL OR "
            "not_before <= ?)) OR status = 'running'"
        )
        args: list[Any] = [wall_now]
        if profile is not None:
            sql = f"SELECT * FROM ({sql}) AS runnable WHERE profile = ?"
            args.append(profile)
        return self.conn.execute(sql + " ORDER BY id" + self._row_lock, args).fetchall()

    # --- writing through the search indexes ----------------------------------------------

    def execute_indexed(
        self, table: str, sql: str, params: Any = (), *, many: bool = False
    ) -> Cursor:
        """Run an insert into ``table`` (whose search index its triggers or generated
        columns keep), in a savepoint of the caller's transaction; a store whose index can
        be damaged on its own mends it and runs the insert once more."""
        with self.write():
            if many:
                return self.conn.executemany(sql, params)
            return self.conn.execute(sql, params)

    def through_damaged_index(self, table: str, attempt: Callable[[], T]) -> tuple[T, str | None]:
        """``(attempt(), None)``; a store whose search index of ``table`` can be damaged on
        its own runs ``attempt`` (a write) again after mending it — or without indexing,
        when it cannot be mended — and says which in the note."""
        return attempt(), None

    def mend_indexes(self, *, notify: bool = True) -> str | None:
        """Rebuild the search indexes that cannot even be opened, before writes that would
        fail on them; the note of what was rebuilt (also told to `repair_notices` when
        ``notify``), or None (always, where indexes live in the tables)."""
        return None

    @contextlib.contextmanager
    def bulk_load(self) -> Iterator[None]:
        """Around a bulk import: whatever makes many inserts faster (a larger page cache),
        restored afterwards."""
        yield

    @contextlib.contextmanager
    def deferred_indexing(self, table: str) -> Iterator[None]:
        """Inside a write transaction, around a batch of inserts into ``table``: where the
        search index is kept by triggers, it is written once for the whole batch at the end
        (rows with a higher id than before)."""
        yield

    # --- purge, backup, health -----------------------------------------------------------

    @abstractmethod
    def purging(self, profile: str, ref: str) -> contextlib.AbstractContextManager[Purging]:
        """A purge's write transaction for ``profile`` (``ref`` names what is purged, for
        the record): the append-only guards let its deletes of that profile's rows through
        until `Purging.guard_again`. Raises InvalidInput inside another transaction or for
        a profile the store is not bound to."""

    @abstractmethod
    def backup(self, dest: str, export: Callable[[str], int]) -> dict[str, Any]:
        """A consistent copy of the store at ``dest`` (a new file; it appears only once
        complete): the SQLite file itself, or where a connection sees one tenant, that
        tenant's records written by ``export(path)`` (rheo's export format; returns the
        lines written) from one snapshot. Returns what a front end reports: ``bytes``, and
        for an export ``profile`` and ``records``. Raises StoreError when it cannot be
        written."""

    @abstractmethod
    def health(self, *, repair: bool) -> Health:
        """The store's own checks for ``rheo doctor`` (after repairs when ``repair``), one
        line each: what the database promises (integrity, schema version, tables, search
        indexes; on a server also the guards, row-level security and extensions). Repairs
        never change a row of the ledger. Never raises: a failure is a problem line."""
