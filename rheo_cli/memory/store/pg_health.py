"""Checking and repairing the PostgreSQL store (`rheo doctor` there): what the schema promises,
read back from the catalog.

Each ``*_problems`` function returns one line per problem (empty when sound); each ``repair_*``
function fixes what can be fixed without touching a row of the ledger, with the rights the
connection logged in with (`pg_schema.owner_rights`: the tables' owner or a superuser), and
returns what it did. The rules checked are the schema's own (`pg_schema`): the append-only
guards (triggers, enabled, calling functions that still refuse), row-level security enabled
and forced on every tenant table with exactly rheo's policy, the extensions the search
needs, the search indexes valid, every stored ``tsvector`` equal to what its text gives
today, and jobs whose runner died. Reads of rows are the tenant's and name its profile.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .pg_schema import (
    CJK_CLASS,
    SCHEMA_VERSION,
    TENANT_TABLES,
    owner_rights,
    qualified,
    schema_version,
)

if TYPE_CHECKING:
    from .pg import PgConnection

_REFUSE = """CREATE OR REPLACE FUNCTION rheo_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'integrity_constraint_violation';
    END $$"""
_REFUSE_UNLESS_PURGING = """
    CREATE OR REPLACE FUNCTION rheo_refuse_unless_purging() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF OLD.profile = current_setting('rheo.purge', true)
           AND (TG_OP = 'DELETE' OR NEW.profile = OLD.profile) THEN
            IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
            RETURN NEW;
        END IF;
        RAISE EXCEPTION '%', TG_ARGV[0] USING ERRCODE = 'integrity_constraint_violation';
    END $$"""
FUNCTIONS = {"rheo_refuse": _REFUSE, "rheo_refuse_unless_purging": _REFUSE_UNLESS_PURGING}
"""The guard functions (migrations m001 and m004), as they are today."""

_ROW_DELETE, _ROW_UPDATE, _TRUNCATE = 11, 19, 34  # pg_trigger.tgtype: BEFORE (+ROW) + event


def _guard(table: str, name: str, kind: int, function: str, message: str) -> tuple[Any, ...]:
    event = {_ROW_DELETE: "DELETE", _ROW_UPDATE: "UPDATE", _TRUNCATE: "TRUNCATE"}[kind]
    if name == "memory_items_content_fixed":
        event = ("UPDATE OF profile, category, topic, label, properties, content_key, "
                 "source_turn_id, created_at")  # fmt: skip
    each = "STATEMENT" if kind == _TRUNCATE else "ROW"
    sql = (
        f"CREATE TRIGGER {name} BEFORE {event} ON {table} FOR EACH {each} "
        f"EXECUTE FUNCTION {function}('{message}')"
    )
    return table, kind, function, sql


def _guards() -> dict[str, tuple[Any, ...]]:
    out: dict[str, tuple[Any, ...]] = {}
    what = {"turns": "the ledger", "memory_events": "memory history",
            "digests": "the digest log", "purges": "the purge log"}  # fmt: skip
    purgeable = {"turns_no_delete", "memory_events_no_update", "memory_events_no_delete",
                 "digests_no_delete", "memory_items_no_delete"}  # fmt: skip
    for table, label in what.items():
        for suffix, kind, verb in (("no_update", _ROW_UPDATE, "changed"),
                                   ("no_delete", _ROW_DELETE, "deleted"),
                                   ("no_truncate", _TRUNCATE, "deleted")):  # fmt: skip
            name = f"{table}_{suffix}"
            function = "rheo_refuse_unless_purging" if name in purgeable else "rheo_refuse"
            message = f"{label} is append-only: rows cannot be {verb}"
            out[name] = _guard(table, name, kind, function, message)
    out["memory_items_content_fixed"] = _guard(
        "memory_items", "memory_items_content_fixed", _ROW_UPDATE, "rheo_refuse",
        "memory item content is immutable: write a new item",
    )  # fmt: skip
    out["memory_items_no_delete"] = _guard(
        "memory_items", "memory_items_no_delete", _ROW_DELETE, "rheo_refuse_unless_purging",
        "memory items are never deleted: retract them",
    )  # fmt: skip
    out["kb_chunks_no_change"] = _guard(
        "kb_chunks", "kb_chunks_no_change", _ROW_UPDATE, "rheo_refuse",
        "knowledge chunks are immutable: add a new version",
    )  # fmt: skip
    return out


GUARDS = _guards()
"""Every append-only guard: trigger name -> (table, tgtype, function, CREATE statement)."""

TABLES = (*TENANT_TABLES, "schema_migrations")
"""Tables every current database has."""

EXTENSIONS = ("pg_trgm", "unaccent")
"""Extensions the search needs: trigrams for text without spaces, accents folded."""

FTS_COLUMNS = {
    "turns": "to_tsvector('rheo_english', content)",
    "memory_items": "to_tsvector('rheo_english', topic || ' ' || label || ' ' || properties)",
    "digests": "to_tsvector('rheo_english', narrative || ' ' || decisions)",
    "kb_chunks": "setweight(to_tsvector('rheo_english', heading), 'A') "
    "|| setweight(to_tsvector('rheo_english', content), 'B')",
}
"""Each table's stored ``fts`` column: the expression it is generated by."""

SEARCH_INDEXES = {
    "turns_fts": "CREATE INDEX turns_fts ON turns USING gin (fts)",
    "turns_cjk": "CREATE INDEX turns_cjk ON turns USING gin (content gin_trgm_ops) "
    f"WHERE content ~ '{CJK_CLASS}'",
    "memory_items_fts": "CREATE INDEX memory_items_fts ON memory_items USING gin (fts)",
    "digests_fts": "CREATE INDEX digests_fts ON digests USING gin (fts)",
    "kb_chunks_fts": "CREATE INDEX kb_chunks_fts ON kb_chunks USING gin (fts)",
}
"""The search indexes and how each is built."""

POLICY = "(profile = current_setting('rheo.tenant'::text, true))"
"""Row-level security's condition on every tenant table, as the catalog prints it."""


IN_SCHEMA = "relnamespace = current_schema()::regnamespace"
"""Catalog rows of the connection's own schema (the first of its search path)."""


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:200]


# --- schema ------------------------------------------------------------------------------


def schema_problems(conn: PgConnection) -> list[str]:
    """The schema version against this rheo's."""
    version = schema_version(conn)
    if version > SCHEMA_VERSION:
        return [f"version {version} is newer than this rheo ({SCHEMA_VERSION}): upgrade rheo"]
    if version < SCHEMA_VERSION:
        return [f"version {version} of {SCHEMA_VERSION}: any rheo command upgrades it"]
    return []


def missing_tables(conn: PgConnection) -> list[str]:
    """rheo's tables the schema lacks."""
    rows = conn.execute(
        f"SELECT relname FROM pg_class WHERE {IN_SCHEMA} AND relkind IN ('r', 'p')"
    ).fetchall()
    present = {r[0] for r in rows}
    return [t for t in TABLES if t not in present]


# --- append-only guards ------------------------------------------------------------------


def guard_problems(conn: PgConnection) -> list[str]:
    """Guards missing, disabled, on the wrong event or calling the wrong function, and guard
    functions that no longer refuse."""
    problems: list[str] = []
    functions = {
        r[0]: r[1]
        for r in conn.execute(
            "SELECT proname, prosrc FROM pg_proc WHERE pronamespace = "
            "current_schema()::regnamespace AND proname = ANY(?)",
            (list(FUNCTIONS),),
        ).fetchall()
    }
    for name in FUNCTIONS:
        if name not in functions:
            problems.append(f"function {name} is missing")
        elif "RAISE EXCEPTION" not in functions[name].upper():
            problems.append(f"function {name} no longer refuses")
    found = {
        r[0]: tuple(r[1:])
        for r in conn.execute(
            "SELECT t.tgname, c.relname, t.tgenabled, p.proname, t.tgtype FROM pg_trigger t "
            "JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid "
            f"WHERE c.{IN_SCHEMA} AND NOT t.tgisinternal"
        ).fetchall()
    }
    for name, (table, kind, function, _sql) in GUARDS.items():
        if name not in found:
            problems.append(f"{name} is missing")
            continue
        on, enabled, calls, tgtype = tuple(found[name])
        if on != table or calls != function or int(tgtype) != kind:
            problems.append(f"{name} is not rheo's guard")
        elif enabled not in ("O", "A"):
            problems.append(f"{name} is disabled")
    return problems


def repair_guards(conn: PgConnection) -> list[str]:
    """Recreate missing or altered guards and functions, enable disabled ones."""
    done: list[str] = []
    problems = guard_problems(conn)
    if not problems:
        return done
    with owner_rights(conn), conn.raw.transaction():
        raw = conn.raw
        for name, sql in FUNCTIONS.items():
            if any(p.startswith(f"function {name} ") for p in problems):
                raw.execute(sql.encode())
                done.append(f"function {name} recreated")
        for name, (table, _kind, _function, sql) in GUARDS.items():
            if f"{name} is missing" in problems or f"{name} is not rheo's guard" in problems:
                raw.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
                raw.execute(sql.encode())
                done.append(f"{name} recreated")
            elif f"{name} is disabled" in problems:
                raw.execute(f"ALTER TABLE {table} ENABLE TRIGGER {name}")
                done.append(f"{name} enabled")
    return done


# --- row-level security ------------------------------------------------------------------


def rls_problems(conn: PgConnection) -> list[str]:
    """Tenant tables without row-level security enabled and forced, without rheo's policy,
    or with another policy beside it (policies are OR-ed: one more can only widen)."""
    problems: list[str] = []
    tables = {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            f"SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class "
            f"WHERE {IN_SCHEMA} AND relname = ANY(?)",
            (list(TENANT_TABLES),),
        ).fetchall()
    }
    policies: dict[str, list[tuple[Any, ...]]] = {}
    for r in conn.execute(
        "SELECT c.relname, p.polname, p.polcmd, p.polpermissive, p.polroles, "
        "pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid) "
        f"FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid WHERE c.{IN_SCHEMA}"
    ).fetchall():
        policies.setdefault(r[0], []).append(tuple(r[1:]))
    for table in TENANT_TABLES:
        if table not in tables:
            continue  # reported by missing_tables
        enabled, forced = tables[table]
        if not enabled:
            problems.append(f"{table}: row-level security is off")
        elif not forced:
            problems.append(f"{table}: row-level security is not forced")
        own = [p for p in policies.get(table, []) if p[0] == f"{table}_tenant"]
        others = [p[0] for p in policies.get(table, []) if p[0] != f"{table}_tenant"]
        if not own:
            problems.append(f"{table}: policy {table}_tenant is missing")
        elif own[0][1:] != ("*", True, [0], POLICY, POLICY):
            problems.append(f"{table}: policy {table}_tenant is not rheo's")
        if others:
            problems.append(f"{table}: other policies widen it: {', '.join(sorted(others))}")
    return problems


def repair_rls(conn: PgConnection) -> list[str]:
    """Enable and force row-level security and (re)create rheo's policy where it is missing or
    altered. Another policy on a tenant table is left for a person to judge."""
    problems = rls_problems(conn)
    done: list[str] = []
    if not any("other policies" not in p for p in problems):
        return done
    with owner_rights(conn), conn.raw.transaction():
        raw = conn.raw
        for table in TENANT_TABLES:
            mine = [p for p in problems if p.startswith(f"{table}: ")]
            if not any("other policies" not in p for p in mine):
                continue
            raw.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
            raw.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
            if any("policy" in p and "other policies" not in p for p in mine):
                raw.execute(f"DROP POLICY IF EXISTS {table}_tenant ON {table}")
                raw.execute(
                    f"CREATE POLICY {table}_tenant ON {table} "
                    "USING (profile = current_setting('rheo.tenant', true)) "
                    "WITH CHECK (profile = current_setting('rheo.tenant', true))"
                )
            done.append(f"row-level security of {table} restored")
    return done


# --- search ------------------------------------------------------------------------------


def extension_problems(conn: PgConnection) -> list[str]:
    """Extensions the search needs that the database lacks."""
    present = {r[0] for r in conn.execute("SELECT extname FROM pg_extension").fetchall()}
    return [f"{name} is not installed" for name in EXTENSIONS if name not in present]


def repair_extensions(conn: PgConnection) -> list[str]:
    """Install missing extensions (pg_trgm and unaccent are trusted: a database owner may)."""
    done = []
    for problem in extension_problems(conn):
        name = problem.split()[0]
        with owner_rights(conn):
            conn.raw.execute(f"CREATE EXTENSION IF NOT EXISTS {name} SCHEMA public")
        done.append(f"extension {name} installed")
    return done


def index_problems(conn: PgConnection) -> list[str]:
    """Search indexes that are missing or invalid (a build that failed half-way)."""
    found = {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            "SELECT c.relname, i.indisvalid, i.indisready FROM pg_index i "
            f"JOIN pg_class c ON c.oid = i.indexrelid WHERE c.{IN_SCHEMA} "
            "AND c.relname = ANY(?)",
            (list(SEARCH_INDEXES),),
        ).fetchall()
    }
    problems = []
    for name in SEARCH_INDEXES:
        if name not in found:
            problems.append(f"{name} is missing")
        elif not (found[name][0] and found[name][1]):
            problems.append(f"{name} is invalid")
    return problems


def stale_tsvectors(conn: PgConnection, profile: str) -> dict[str, int]:
    """Per table, how many of ``profile``'s rows store a ``tsvector`` other than the one their
    text gives with today's text-search configuration (after a dictionary or server upgrade
    changed it); tables with none are left out. Reads every row of the profile."""
    out: dict[str, int] = {}
    for table, expression in FTS_COLUMNS.items():
        row = conn.execute(
            f"SELECT count(*) FROM {table} WHERE profile = ? "
            f"AND fts IS DISTINCT FROM ({expression})",
            (profile,),
        ).fetchone()
        if int(row[0]):
            out[table] = int(row[0])
    return out


def repair_search(conn: PgConnection, profile: str) -> list[str]:
    """Rebuild what search reads from the tables: a table with stale ``tsvector`` values gets
    its ``fts`` column computed again (the column is dropped and added back, generated from
    the text, and its index built), a missing index is built, an invalid one rebuilt. Every
    tenant's rows are recomputed; no text changes. Each table in its own transaction."""
    done: list[str] = []
    stale = stale_tsvectors(conn, profile)
    problems = index_problems(conn)
    with owner_rights(conn):
        raw = conn.raw
        for table in stale:
            index = f"{table}_fts"
            with raw.transaction():
                raw.execute(f"ALTER TABLE {table} DROP COLUMN fts")
                raw.execute(
                    f"ALTER TABLE {table} ADD COLUMN fts tsvector "
                    f"GENERATED ALWAYS AS ({FTS_COLUMNS[table]}) STORED"
                )
                raw.execute(qualified(conn, SEARCH_INDEXES[index]).encode())
            done.append(f"{table}.fts computed again from the text, {index} rebuilt")
            problems = [p for p in problems if not p.startswith(f"{index} ")]
        for problem in problems:
            name = problem.split()[0]
            if problem.endswith("missing"):
                raw.execute(qualified(conn, SEARCH_INDEXES[name]).encode())
                done.append(f"{name} built")
            else:
                raw.execute(f"REINDEX INDEX {name}")
                done.append(f"{name} rebuilt")
    return done


# --- jobs --------------------------------------------------------------------------------


def stuck_jobs(conn: PgConnection, profile: str, wall_now: float) -> list[int]:
    """Ids of ``profile``'s jobs still marked running after their lease ended (``wall_now``:
    Unix seconds): their runner died and no worker has taken them over yet."""
    rows = conn.execute(
        "SELECT id FROM jobs WHERE profile = ? AND status = 'running' "
        "AND (lease_until IS NULL OR lease_until < ?) ORDER BY id",
        (profile, wall_now),
    ).fetchall()
    return [int(r[0]) for r in rows]


def release_stuck(conn: PgConnection, profile: str, wall_now: float, ts: str) -> int:
    """Put ``profile``'s stuck jobs back in the queue (pending, no attempt counted, as a
    takeover would); returns how many."""
    from .db import write

    with write(conn):  # type: ignore[arg-type]
        cur = conn.execute(
            "UPDATE jobs SET status = 'pending', lease_until = NULL, leased_by = NULL, "
            "updated_at = ? WHERE profile = ? AND status = 'running' "
            "AND (lease_until IS NULL OR lease_until < ?)",
            (ts, profile, wall_now),
        )
        return max(cur.rowcount, 0)


def server(conn: PgConnection) -> str:
    """``PostgreSQL 15.18, database rheo on 127.0.0.1:5432 as rheo, schema public`` (never a
    password)."""
    info = conn.raw.info
    version = str(conn.execute("SHOW server_version").fetchone()[0]).split()[0]
    schema = conn.execute("SELECT current_schema()").fetchone()[0]
    return (
        f"PostgreSQL {version}, database {info.dbname} on {info.host}:{info.port} as "
        f"{info.user}, schema {schema}"
    )
