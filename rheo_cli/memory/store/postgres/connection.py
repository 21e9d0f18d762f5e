"""rheo's store on PostgreSQL: the connection the engine is given, over psycopg 3.

The engine's plain SQL is written in the subset both stores run (``?`` parameters, ``INSERT
OR IGNORE``, rows read by index and by name, ``in_transaction``, ``lastrowid``,
``rowcount``); `PgConnection` gives psycopg that surface (`api.Connection`), and the few
queries whose text differs are the store's own (`search`, `PostgresStore`).

What the connection does to a statement, all mechanical: ``?`` becomes ``%s`` (and a literal
``%`` ``%%``); ``INSERT OR IGNORE`` becomes ``INSERT ... ON CONFLICT DO NOTHING``; a single-row
``INSERT ... VALUES`` into a table with an ``id`` gets ``RETURNING id`` so ``lastrowid`` works.
A write transaction (`PgConnection.begin`) is ``BEGIN`` plus a transaction-scoped advisory
lock on the tenant, so writers of one tenant queue exactly as SQLite's writers do, waiting at
most `api.BUSY_TIMEOUT_S` (``lock_timeout``) as SQLite's busy timeout does. psycopg's errors
are raised as rheo's (`as_rheo_error`): a refused constraint, trigger or row-level security check
is `errors.Integrity`, a lock wait that ran out `errors.Busy`, a lost server
`errors.Unavailable`.

Tenant isolation is the database's: every table carries the profile and has a row-level
security policy ``profile = current_setting('rheo.tenant')`` (FORCE ROW LEVEL SECURITY, see
`schema`). The connection sets ``rheo.tenant`` from the profile it was opened for — from
configuration, never from anything a model writes — so a query that forgets its filter still
sees only its tenant, and a row written for another tenant is refused.

psycopg is imported only in ``store/postgres/`` (the engine is otherwise standard library
only).
"""

from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from .. import api
from ..errors import Busy, DatabaseError, Integrity, StoreError, Unavailable

if TYPE_CHECKING:
    from . import PostgresStore

ID_TABLES = frozenset(
    {
        "sessions",
        "turns",
        "memory_items",
        "memory_events",
        "digests",
        "jobs",
        "kb_documents",
        "kb_chunks",
    }
)
"""Tables whose rows have a generated ``id`` (an insert into one returns it as lastrowid)."""

_INSERT = re.compile(r"^\s*INSERT\s+(OR\s+IGNORE\s+)?INTO\s+(\w+)", re.IGNORECASE)


def is_postgres_url(url: str) -> bool:
    """True for a ``postgresql://`` or ``postgres://`` connection URL."""
    return url.startswith(("postgresql://", "postgres://"))


@lru_cache(maxsize=2048)
def translate(sql: str, has_params: bool) -> tuple[str, bool]:
    """``(statement for psycopg, returns_id)`` for an engine statement written for SQLite.

    ``?`` outside string literals becomes ``%s`` (``%`` becomes ``%%``) when the statement
    has parameters; ``INSERT OR IGNORE`` gets ``ON CONFLICT DO NOTHING``; a single-row insert
    into one of `ID_TABLES` without its own RETURNING gets ``RETURNING id`` (``returns_id``).
    """
    out: list[str] = []
    quoted = False
    for ch in sql:
        if ch == "'":
            quoted = not quoted
            out.append(ch)
        elif has_params and not quoted and ch == "?":
            out.append("%s")
        elif has_params and ch == "%":
            out.append("%%")
        else:
            out.append(ch)
    text = "".join(out)
    returns_id = False
    match = _INSERT.match(text)
    if match:
        upper = text.upper()
        if match.group(1):
            text = text[: match.start(1)] + text[match.end(1) :]
            text = text.rstrip().rstrip(";") + " ON CONFLICT DO NOTHING"
            upper = text.upper()
        if (
            match.group(2).lower() in ID_TABLES
            and "RETURNING" not in upper
            and re.search(r"\)\s*VALUES\s*\(", text, re.IGNORECASE)
        ):
            text = text.rstrip().rstrip(";") + " RETURNING id"
            returns_id = True
    return text, returns_id


class Row(tuple[Any, ...]):
    """A result row readable by index and by column name, like `sqlite3.Row`."""

    __slots__ = ()
    _index: dict[str, int] = {}
    _names: tuple[str, ...] = ()

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            try:
                return tuple.__getitem__(self, self._index[key.lower()])
            except KeyError:
                raise IndexError(f"No item with that key: {key!r}") from None
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        """The column names, in order."""
        return list(self._names)


@lru_cache(maxsize=512)
def _row_class(names: tuple[str, ...]) -> type[Row]:
    index = {name.lower(): i for i, name in reversed(list(enumerate(names)))}
    return type("Row", (Row,), {"__slots__": (), "_index": index, "_names": names})


def _named_rows(cursor: Any) -> Callable[[Sequence[Any]], Any]:
    description = cursor.description
    if description is None:
        return tuple
    cls = _row_class(tuple(col.name for col in description))
    return lambda values: cls(values)


def _plain_rows(cursor: Any) -> Callable[[Sequence[Any]], Any]:
    return tuple


TENANT_LOCK = "hashtext('rheo:' || current_schema() || ':' || ?)"
"""The key of a tenant's write lock (an advisory lock, held until its transaction ends), one
parameter: the tenant. Advisory locks are the database's, so the key names the store's
schema too: stores of the same profile in two schemas never wait for each other."""

BUSY_STATES = frozenset({"55P03", "57014", "40P01"})
"""SQLSTATEs of a wait that ran out: ``lock_not_available`` (``lock_timeout``),
``query_canceled`` (``statement_timeout``), ``deadlock_detected``."""


GONE_STATES = ("08", "57P")
"""SQLSTATE classes of a server gone or going: connection exceptions (``08``) and operator
intervention (``57P01`` admin shutdown: the backend terminated, ``57P02``, ``57P03``)."""


def as_rheo_error(exc: Exception) -> DatabaseError:
    """The rheo error saying a psycopg error (its first line as the message, its SQLSTATE as
    ``code``): a constraint, trigger or row-level security refusal is Integrity, a lock wait
    that ran out Busy, a lost or unreachable server Unavailable."""
    import psycopg

    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    sqlstate = getattr(exc, "sqlstate", None) or ""
    if isinstance(exc, psycopg.errors.IntegrityError) or sqlstate == "P0001":
        return Integrity(message, code=sqlstate)
    if sqlstate == "42501":  # insufficient privilege: a row-level security refusal
        return Integrity(message, code=sqlstate)
    if sqlstate in BUSY_STATES:
        return Busy(message, code=sqlstate)
    if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError) and (
        not sqlstate or sqlstate.startswith(GONE_STATES)
    ):
        return Unavailable(message, code=sqlstate)
    return DatabaseError(message, code=sqlstate)


class PgCursor:
    """A cursor with the surface the engine uses (`api.Cursor`)."""

    def __init__(self, owner: PgConnection) -> None:
        self._owner = owner
        self.lastrowid: int | None = None
        self._plain = False
        if owner.lost and not owner.in_transaction and owner.can_reconnect:
            owner.reconnect()
        self._cur = owner.raw.cursor(row_factory=_named_rows) if not owner.lost else None

    @property
    def row_factory(self) -> object:
        """None for plain tuples; anything else for rows readable by name."""
        return None if self._plain else Row

    @row_factory.setter
    def row_factory(self, value: object) -> None:
        self._plain = value is None
        if self._cur is not None:
            self._cur.row_factory = _plain_rows if self._plain else _named_rows

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> PgCursor:
        """Run one statement (``?`` parameters); raises rheo's error for a failure
        (`as_rheo_error`)."""
        import psycopg

        text, returns_id = translate(sql, bool(params))
        verb = text.strip().upper()
        if verb == "BEGIN IMMEDIATE":
            self._owner.begin()
            return self
        if verb == "COMMIT":
            self._owner.commit()
            return self
        if verb == "ROLLBACK":
            self._owner.rollback()
            return self
        owner = self._owner
        if owner.lost and not owner.in_transaction:
            owner.reconnect()
            self._renew()
        if self._cur is None:
            raise Unavailable("the PostgreSQL connection dropped during a write")
        try:
            self._cur.execute(text, tuple(params) if params else None)
        except psycopg.Error as exc:
            if not owner.dropped(exc) or owner.transaction_lost:
                raise as_rheo_error(exc) from exc
            owner.reconnect()  # outside a transaction nothing was done: once more, anew
            self._renew()
            assert self._cur is not None
            try:
                self._cur.execute(text, tuple(params) if params else None)
            except psycopg.Error as again:
                raise as_rheo_error(again) from again
        if returns_id:
            row = self._cur.fetchone()
            self.lastrowid = int(row[0]) if row else None
        return self

    def _renew(self) -> None:
        """A cursor of the owner's new connection, with the same row shape."""
        plain = self._plain
        self._cur = self._owner.raw.cursor(row_factory=_named_rows)
        self.row_factory = None if plain else Row

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> PgCursor:
        """Run one statement once per parameter tuple (in one round trip when possible)."""
        import psycopg

        if self._owner.lost and not self._owner.in_transaction:
            self._owner.reconnect()
            self._renew()
        if self._cur is None:
            raise Unavailable("the PostgreSQL connection dropped during a write")
        text, returns_id = translate(sql, True)
        if returns_id:
            text = text[: -len(" RETURNING id")]
        try:
            self._cur.executemany(text, [tuple(p) for p in seq])
        except psycopg.Error as exc:
            raise as_rheo_error(exc) from exc
        return self

    def fetchone(self) -> Any:
        """The next row, or None."""
        if self._cur is None or self._cur.description is None:
            return None
        return self._cur.fetchone()

    def fetchall(self) -> list[Any]:
        """Every remaining row."""
        if self._cur is None or self._cur.description is None:
            return []
        return list(self._cur.fetchall())

    def fetchmany(self, size: int = 1) -> list[Any]:
        """Up to ``size`` more rows."""
        if self._cur is None or self._cur.description is None:
            return []
        return list(self._cur.fetchmany(size))

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())

    @property
    def rowcount(self) -> int:
        """Rows changed by the last INSERT/UPDATE/DELETE (-1 when unknown)."""
        return int(self._cur.rowcount) if self._cur is not None else -1

    @property
    def description(self) -> Any:
        """Column descriptions of the last query (name first), or None."""
        return self._cur.description if self._cur is not None else None

    def close(self) -> None:
        """Release the cursor."""
        if self._cur is not None:
            self._cur.close()


class PgConnection:
    """An open PostgreSQL store bound to one tenant, with the surface the engine uses
    (`api.Connection`).

    Autocommit outside explicit transactions, like the engine's SQLite connections; the engine
    opens transactions only through its store (`api.Store.write`).
    """

    store: PostgresStore

    def __init__(self, raw: Any, tenant: str, *, url: str | None = None) -> None:
        self.raw = raw
        self.tenant = tenant
        self.row_factory: object = Row
        self._lock = threading.RLock()
        self._url = url
        self.wait_s = api.BUSY_TIMEOUT_S
        """How long (seconds) a wait for a lock lasts (``lock_timeout``, `set_wait`)."""
        self.transaction_lost = False
        """True when the connection dropped inside a transaction: its work is gone, and the
        engine's ROLLBACK (or COMMIT, which then raises) ends it before anything else runs."""

    @property
    def in_transaction(self) -> bool:
        """True between BEGIN and COMMIT/ROLLBACK (or in a failed transaction, or one whose
        connection dropped and was not yet rolled back)."""
        import psycopg

        if self.transaction_lost:
            return True
        if self.raw.closed:
            return False
        status = self.raw.info.transaction_status
        return bool(
            status not in (psycopg.pq.TransactionStatus.IDLE, psycopg.pq.TransactionStatus.UNKNOWN)
        )

    @property
    def lost(self) -> bool:
        """True when the server ended the connection (restart, ``pg_terminate_backend``, an
        idle timeout, a network cut)."""
        return bool(self.raw.closed or self.raw.broken)

    def dropped(self, exc: BaseException) -> bool:
        """True when ``exc`` came from the connection dropping (rather than from the
        statement); a drop inside a transaction marks it lost (`transaction_lost`)."""
        import psycopg

        if not isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
            return False
        if not self.lost:
            return False
        if self._began:
            self.transaction_lost = True
        return self._url is not None

    _began = False

    @property
    def can_reconnect(self) -> bool:
        """True when the connection knows its URL (opened by `connect`)."""
        return self._url is not None

    def reconnect(self) -> None:
        """Open a new connection to the same store for the same tenant (the tenant role,
        ``rheo.tenant`` and the lock timeout set again), replacing the dropped one. Raises
        Unavailable (one line) when the server cannot be reached."""
        if self._url is None:
            raise Unavailable("the PostgreSQL connection was closed")
        import psycopg

        from . import roles, schema

        with self._lock:
            with contextlib.suppress(psycopg.Error):
                self.raw.close()
            try:
                raw = psycopg.connect(self._url, autocommit=True, connect_timeout=10)
            except psycopg.Error as exc:
                raise Unavailable(f"PostgreSQL is not reachable: {_one_line(exc)}") from None
            _prepare(raw, self.wait_s)
            self.raw = raw
            try:
                schema.enter_tenant_role(self)
                roles.check_granted(self)
                raw.execute("SELECT set_config('rheo.tenant', %s, false)", (self.tenant,))
            except psycopg.Error as exc:
                raise as_rheo_error(exc) from exc
            self.transaction_lost = False
            self._began = False

    def cursor(self) -> PgCursor:
        """A new cursor (rows by name; set ``row_factory = None`` for plain tuples)."""
        return PgCursor(self)

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> PgCursor:
        """Run one statement with ``?`` parameters; returns its cursor."""
        cur = PgCursor(self)
        if self.row_factory is None:
            cur.row_factory = None
        return cur.execute(sql, params)

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]]) -> PgCursor:
        """Run one statement once per parameter tuple."""
        return PgCursor(self).executemany(sql, seq)

    def begin(self, wait_s: float | None = None) -> None:
        """Open a write transaction: ``BEGIN``, then the tenant's transaction-scoped advisory
        lock, so a read-then-write of one tenant (session detection, reinforcement) cannot
        interleave with another connection's, as under SQLite's ``BEGIN IMMEDIATE``. The
        lock is waited for at most ``wait_s`` seconds (None: the connection's
        ``lock_timeout``, `api.BUSY_TIMEOUT_S`); then Busy, with no transaction left open."""
        import psycopg

        if self.lost:
            self.reconnect()  # a new transaction: nothing of the old connection is pending
        for attempt in (1, 2):
            try:
                self.raw.execute("BEGIN")
                if wait_s is not None:
                    self.raw.execute("SELECT set_config('lock_timeout', %s, true)", (_ms(wait_s),))
                self.raw.execute(
                    f"SELECT pg_advisory_xact_lock({TENANT_LOCK})".replace("?", "%s"),
                    (self.tenant,),
                )
                if wait_s is not None:  # the rest of the transaction waits as any other
                    self.raw.execute(
                        "SELECT set_config('lock_timeout', %s, true)", (_ms(self.wait_s),)
                    )
            except psycopg.Error as exc:
                if attempt == 1 and self._url is not None and self.lost:
                    self.reconnect()  # dropped before anything was written: begin anew
                    continue
                if not self.lost:
                    with contextlib.suppress(psycopg.Error):
                        self.raw.execute("ROLLBACK")
                raise as_rheo_error(exc) from exc
            self._began = True
            return

    def set_wait(self, seconds: float) -> None:
        """Wait ``seconds`` for a lock from now on (``lock_timeout``), outside a
        transaction."""
        self.wait_s = seconds
        self.raw.execute("SELECT set_config('lock_timeout', %s, false)", (_ms(seconds),))

    def set_tenant(self, tenant: str) -> None:
        """Bind the connection to ``tenant`` (a profile name from configuration): every
        row-level security policy reads it. Raises StoreError inside a transaction."""
        if self.in_transaction:
            raise StoreError("cannot change the tenant inside a transaction")
        self.tenant = tenant
        if self.lost and self._url is not None:
            self.reconnect()  # sets the tenant on the new connection
            return
        self.raw.execute("SELECT set_config('rheo.tenant', %s, false)", (tenant,))

    def commit(self) -> None:
        """Commit an open transaction (nothing to do in autocommit). Raises Unavailable when
        the connection dropped first: nothing was committed."""
        import psycopg

        if self.transaction_lost:
            self.transaction_lost = self._began = False
            raise Unavailable("the PostgreSQL connection dropped: nothing was stored")
        if self.in_transaction:
            try:
                self.raw.execute("COMMIT")
            except psycopg.Error as exc:
                raise as_rheo_error(exc) from exc
            finally:
                self._began = False

    def rollback(self) -> None:
        """Roll back an open transaction (one on a dropped connection is already gone)."""
        import psycopg

        if self.transaction_lost or self.lost:
            self.transaction_lost = self._began = False
            return
        if self.in_transaction:
            try:
                self.raw.execute("ROLLBACK")
            except psycopg.Error as exc:
                raise as_rheo_error(exc) from exc
            finally:
                self._began = False

    def close(self) -> None:
        """Close the connection (an open transaction is rolled back by the server)."""
        self.raw.close()

    def __enter__(self) -> PgConnection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(url: str, tenant: str, *, migrate_schema: bool = True) -> PgConnection:
    """Open the PostgreSQL store at ``url`` for ``tenant`` and bring its schema up to date.

    ``url``: a libpq URL (``postgresql://user@host:port/db``; ``?options=-csearch_path=x``
    selects a schema). The schema is migrated with the connecting role's rights (it must own
    the tables or be able to create them); afterwards a superuser connection switches to the
    ``rheo_tenant`` role so row-level security applies to it too. Lock waits are bounded by
    ``lock_timeout`` = `api.BUSY_TIMEOUT_S`, as SQLite's by its busy timeout (a statement's
    own work is not bounded, on either store).
    Raises StoreError when psycopg is missing or the server cannot be reached or migrated
    (`schema.MissingExtensions` when the extensions search needs are missing and this role
    may not create them).
    """
    try:
        import psycopg
    except ImportError:
        raise StoreError("PostgreSQL needs psycopg: install rheo's 'postgres' extra") from None
    from . import roles, schema

    try:
        raw = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as exc:
        raise StoreError(f"cannot connect to PostgreSQL: {_one_line(exc)}") from None
    conn = PgConnection(raw, tenant, url=url)
    try:
        _prepare(raw, conn.wait_s)
        if migrate_schema:
            schema.migrate(conn, after_step=roles.regrant_members)
        schema.enter_tenant_role(conn)
        roles.check_granted(conn)
        conn.set_tenant(tenant)
    except StoreError as exc:
        raw.close()
        if isinstance(exc, DatabaseError):
            raise StoreError(f"PostgreSQL store not usable: {_one_line(exc)}") from None
        raise
    except psycopg.Error as exc:
        raw.close()
        raise StoreError(f"PostgreSQL store not usable: {_one_line(exc)}") from None
    except BaseException:
        raw.close()
        raise
    return conn


def _ms(seconds: float) -> str:
    return f"{int(seconds * 1000)}ms"


def _prepare(raw: Any, wait_s: float) -> None:
    """What every new connection gets: ``numeric`` read as int or float, and lock waits
    bounded by ``wait_s`` seconds."""
    raw.adapters.register_loader("numeric", _numeric_loader())
    raw.execute("SELECT set_config('lock_timeout', %s, false)", (_ms(wait_s),))


def _numeric_loader() -> type:
    """A loader reading PostgreSQL ``numeric`` (``sum`` of integers, ``round``) as int when
    whole, else float: the numbers SQLite gives the engine, never `decimal.Decimal`."""
    from psycopg.adapt import Loader

    class NumberLoader(Loader):
        def load(self, data: Any) -> int | float:
            text = bytes(data).decode()
            try:
                return int(text)
            except ValueError:
                return float(text)

    return NumberLoader


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
