"""Checking and repairing the PostgreSQL store (`rheo doctor` there): what the schema promises,
read back from the catalog.

Each ``*_problems`` function returns one line per problem (empty when sound); each ``repair_*``
function fixes what can be fixed without touching a row of the ledger, with the rights the
connection logged in with (`schema.owner_rights`: the tables' owner or a superuser), and
returns what it did. The rules checked are the schema's own (`schema`): the append-only
guards (triggers, enabled, calling functions that still refuse), row-level security enabled
and forced on every tenant table (and the grants) with exactly rheo's policy, the extensions
the schema needs, the postings index valid and its triggers in place, every stored
``tsvector`` equal to what its text gives today and the profile's postings equal to what its
rows give. Reads of rows are the tenant's and name its profile. (Jobs whose runner died are
the engine's check, on both stores: `jobs.stuck`.)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .schema import (
    GRANTS_TABLE,
    M006_FTS,
    OWNER_CHECK,
    POSTING_COLUMNS,
    POSTING_KINDS,
    POSTINGS_FUNCTIONS,
    POSTINGS_TRIGGERS,
    SCHEMA_VERSION,
    TENANT_POLICY,
    TENANT_TABLES,
    TRIGRAM_KIND,
    owner_rights,
    postings_rows,
    qualified,
    schema_version,
    trigram_rows,
)

if TYPE_CHECKING:
    from .connection import PgConnection

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

TABLES = (*TENANT_TABLES, "schema_migrations", GRANTS_TABLE)
"""Tables every current database has."""

EXTENSIONS = ("pg_trgm", "unaccent")
"""Extensions the schema needs: trigrams (the first migration's index), accents folded."""

FTS_COLUMNS = M006_FTS
"""Each table's stored ``fts`` column: the expression it is generated by."""

SEARCH_INDEXES = {
    "postings_pkey": "ALTER TABLE postings ADD CONSTRAINT postings_pkey "
    "PRIMARY KEY (profile, kind, lexeme, doc) INCLUDE (tf, dl)",
}
"""The search index (every search reads ``postings`` through it) and how it is built."""

POSTINGS_BODIES = {
    match.group(1): match.group(2).strip()
    for match in re.finditer(r"FUNCTION (\w+)\(\).*?\$\$(.*?)\$\$", POSTINGS_FUNCTIONS, re.S)
}
"""The trigger functions that keep ``postings`` in step (`pg_schema.POSTINGS_FUNCTIONS`):
name -> body, as the catalog keeps it."""
POSTINGS_FUNCTION_NAMES = tuple(POSTINGS_BODIES)

GRANTS_POLICY = (
    f"pg_has_role(session_user, member, 'MEMBER') OR {OWNER_CHECK}",
    OWNER_CHECK,
)
"""``tenant_grants``' policy: (who sees a row, who may write one)."""


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


def _policies() -> dict[str, tuple[str, str, str]]:
    """Table -> (policy name, USING, WITH CHECK) as rheo creates them."""
    out = {table: (f"{table}_tenant", TENANT_POLICY, TENANT_POLICY) for table in TENANT_TABLES}
    out[GRANTS_TABLE] = (f"{GRANTS_TABLE}_member", *GRANTS_POLICY)
    return out


POLICIES = _policies()
"""Every table under row-level security: (rheo's policy, its USING, its WITH CHECK)."""


def _printed(conn: PgConnection) -> dict[str, tuple[str, str]]:
    """How this server prints each of rheo's policy conditions (``pg_get_expr``): the same
    policies created on a temporary table in a transaction that is rolled back."""
    out: dict[str, tuple[str, str]] = {}
    raw = conn.raw
    with raw.transaction(force_rollback=True):
        raw.execute("CREATE TEMP TABLE rheo_policy_reference (profile TEXT, member regrole)")
        for table, (_name, using, check) in POLICIES.items():
            raw.execute(
                f"CREATE POLICY {table} ON rheo_policy_reference "
                f"USING ({using}) WITH CHECK ({check})"
            )
        for name, qual, withcheck in raw.execute(
            "SELECT polname, pg_get_expr(polqual, polrelid), pg_get_expr(polwithcheck, polrelid) "
            "FROM pg_policy WHERE polrelid = 'rheo_policy_reference'::regclass"
        ).fetchall():
            out[name] = (qual, withcheck)
    return out


def rls_problems(conn: PgConnection) -> list[str]:
    """Tenant tables (and the grants) without row-level security enabled and forced, without
    rheo's policy, or with another policy beside it (policies are OR-ed: one more can only
    widen)."""
    problems: list[str] = []
    tables = {
        r[0]: (r[1], r[2])
        for r in conn.execute(
            f"SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class "
            f"WHERE {IN_SCHEMA} AND relname = ANY(?)",
            (list(POLICIES),),
        ).fetchall()
    }
    policies: dict[str, list[tuple[Any, ...]]] = {}
    for r in conn.execute(
        "SELECT c.relname, p.polname, p.polcmd, p.polpermissive, p.polroles, "
        "pg_get_expr(p.polqual, p.polrelid), pg_get_expr(p.polwithcheck, p.polrelid) "
        f"FROM pg_policy p JOIN pg_class c ON c.oid = p.polrelid WHERE c.{IN_SCHEMA}"
    ).fetchall():
        policies.setdefault(r[0], []).append(tuple(r[1:]))
    printed = _printed(conn)
    for table, (name, _using, _check) in POLICIES.items():
        if table not in tables:
            continue  # reported by missing_tables
        enabled, forced = tables[table]
        if not enabled:
            problems.append(f"{table}: row-level security is off")
        elif not forced:
            problems.append(f"{table}: row-level security is not forced")
        own = [p for p in policies.get(table, []) if p[0] == name]
        others = [p[0] for p in policies.get(table, []) if p[0] != name]
        if not own:
            problems.append(f"{table}: policy {name} is missing")
        elif own[0][1:] != ("*", True, [0], *printed[table]):
            problems.append(f"{table}: policy {name} is not rheo's")
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
        for table, (name, using, check) in POLICIES.items():
            mine = [p for p in problems if p.startswith(f"{table}: ")]
            if not any("other policies" not in p for p in mine):
                continue
            raw.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
            raw.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
            if any("policy" in p and "other policies" not in p for p in mine):
                raw.execute(f"DROP POLICY IF EXISTS {name} ON {table}")
                raw.execute(f"CREATE POLICY {name} ON {table} USING ({using}) WITH CHECK ({check})")
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
    """What search needs that is missing or broken: the postings index (missing, or invalid:
    a build that failed half-way), the trigger functions that keep ``postings`` in step
    (missing, or no longer writing it) and their triggers (missing, disabled, on another
    table or event)."""
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
    functions = {
        r[0]: r[1]
        for r in conn.execute(
            "SELECT proname, prosrc FROM pg_proc WHERE pronamespace = "
            "current_schema()::regnamespace AND proname = ANY(?)",
            (list(POSTINGS_FUNCTION_NAMES),),
        ).fetchall()
    }
    for name in POSTINGS_FUNCTION_NAMES:
        if name not in functions:
            problems.append(f"function {name} is missing")
        elif functions[name].strip() != POSTINGS_BODIES[name]:
            problems.append(f"function {name} is not rheo's")
    triggers = {
        r[0]: tuple(r[1:])
        for r in conn.execute(
            "SELECT t.tgname, c.relname, t.tgenabled, p.proname, t.tgtype FROM pg_trigger t "
            "JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid "
            f"WHERE c.{IN_SCHEMA} AND t.tgname = ANY(?)",
            (list(POSTINGS_TRIGGERS),),
        ).fetchall()
    }
    for name in POSTINGS_TRIGGERS:
        table, verb = name.split("_postings_")
        want = (table, f"rheo_postings_{verb}", _AFTER_INSERT if verb == "added" else _AFTER_DELETE)
        if name not in triggers:
            problems.append(f"trigger {name} is missing")
        elif (triggers[name][0], triggers[name][2], int(triggers[name][3])) != want:
            problems.append(f"trigger {name} is not rheo's")
        elif triggers[name][1] not in ("O", "A"):
            problems.append(f"trigger {name} is disabled")
    return problems


_AFTER_INSERT, _AFTER_DELETE = 4, 8  # pg_trigger.tgtype: AFTER, FOR EACH STATEMENT + event


LEAKPROOF_MATCH = "ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) LEAKPROOF"
"""What a superuser could run once per database so ``@@`` can use a GIN index under
row-level security. rheo no longer needs it: its searches read ``postings`` with leakproof
conditions (BENCHMARKS.md, "PostgreSQL beside SQLite")."""


def match_is_leakproof(conn: PgConnection) -> bool:
    """Whether the server marks the full-text match (``@@``, i.e. ``ts_match_vq``) LEAKPROOF
    (PostgreSQL ships it not; rheo's searches do not depend on it)."""
    row = conn.execute(
        "SELECT proleakproof FROM pg_proc "
        "WHERE oid = 'pg_catalog.ts_match_vq(tsvector, tsquery)'::regprocedure"
    ).fetchone()
    return bool(row and row[0])


def search_speed(conn: PgConnection) -> str:
    """One line on how searches run on this server: through the postings index under
    row-level security, with or without a catalog change (a fact, never a problem)."""
    note = " (ts_match_vq is marked LEAKPROOF here; rheo does not need it)"
    return (
        "searches read the postings index under row-level security (no superuser or "
        "catalog change needed)" + (note if match_is_leakproof(conn) else "")
    )


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


def _tally(rows_sql: str) -> str:
    return f"SELECT count(*), coalesce(sum(tf), 0), coalesce(sum(doc), 0) FROM ({rows_sql}) AS z"


def stale_postings(conn: PgConnection, profile: str) -> dict[str, int]:
    """Per table, how far ``profile``'s postings are from what its rows' ``tsvector`` (and,
    for turns, their text's character trigrams) give: the difference in the number of
    postings, at least 1 when their counts or documents differ (a trigger that was
    disabled, postings deleted by hand); tables in step are left out. Reads every row of the
    profile and its postings."""
    out: dict[str, int] = {}
    for table, kind in POSTING_KINDS.items():
        source = f"(SELECT * FROM {table} WHERE profile = ?)"
        expected = [postings_rows(source, kind)]
        kinds = [kind]
        if table == "turns":
            expected.append(trigram_rows(source))
            kinds.append(TRIGRAM_KIND)
        off = 0
        for rows_sql, k in zip(expected, kinds, strict=True):
            want = conn.execute(_tally(rows_sql), (profile,)).fetchone()
            have = conn.execute(
                _tally(f"SELECT tf, doc FROM postings WHERE profile = ? AND kind = '{k}'"),
                (profile,),
            ).fetchone()
            if tuple(want) != tuple(have):
                off += max(1, abs(int(want[0]) - int(have[0])))
        if off:
            out[table] = off
    return out


def _rebuild_postings(raw: Any, table: str, profile: str | None) -> None:
    """Compute ``table``'s postings again from its rows: ``profile``'s (None: every
    tenant's, which needs row-level security lifted for the tables' owner, in the caller's
    transaction)."""
    kind = POSTING_KINDS[table]
    kinds = [kind, TRIGRAM_KIND] if table == "turns" else [kind]
    source = table if profile is None else f"(SELECT * FROM {table} WHERE profile = %s)"
    args = () if profile is None else (profile,)
    scope = "" if profile is None else " AND profile = %s"
    raw.execute(f"DELETE FROM postings WHERE kind = ANY(%s){scope}", (kinds, *args))
    raw.execute(f"INSERT INTO postings({POSTING_COLUMNS}) {postings_rows(source, kind)}", args)
    if table == "turns":
        raw.execute(f"INSERT INTO postings({POSTING_COLUMNS}) {trigram_rows(source)}", args)


def repair_search(conn: PgConnection, profile: str) -> list[str]:
    """Rebuild what search reads from the tables: the postings trigger functions and triggers
    recreated or enabled; a table with stale ``tsvector`` values gets its ``fts`` column
    computed again (dropped and added back, generated from the text) and every tenant's
    postings of it computed again; a missing postings index is built, an invalid one
    rebuilt; ``profile``'s postings out of step with its rows computed again. No text
    changes. Each table in its own transaction."""
    done: list[str] = []
    stale = stale_tsvectors(conn, profile)
    problems = index_problems(conn)
    with owner_rights(conn):
        raw = conn.raw
        machinery = [p for p in problems if p.startswith(("function ", "trigger "))]
        if machinery:
            with raw.transaction():
                raw.execute(POSTINGS_FUNCTIONS.encode())
                for name, sql in POSTINGS_TRIGGERS.items():
                    table = name.split("_postings_")[0]
                    raw.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
                    raw.execute(sql)
            done.append("the postings triggers recreated")
        for problem in problems:
            if problem.startswith(("function ", "trigger ")):
                continue
            name = problem.split()[0]
            if problem.endswith("missing"):
                raw.execute(qualified(conn, SEARCH_INDEXES[name]).encode())
                done.append(f"{name} built")
            else:
                raw.execute(f"REINDEX INDEX {name}")
                done.append(f"{name} rebuilt")
        for table in stale:
            with raw.transaction():
                raw.execute(f"ALTER TABLE {table} DROP COLUMN fts")
                raw.execute(
                    f"ALTER TABLE {table} ADD COLUMN fts tsvector "
                    f"GENERATED ALWAYS AS ({FTS_COLUMNS[table]}) STORED"
                )
                raw.execute(f"ALTER TABLE {table} NO FORCE ROW LEVEL SECURITY")
                raw.execute("ALTER TABLE postings NO FORCE ROW LEVEL SECURITY")
                _rebuild_postings(raw, table, None)
                raw.execute(f"ALTER TABLE {table} FORCE ROW LEVEL SECURITY")
                raw.execute("ALTER TABLE postings FORCE ROW LEVEL SECURITY")
            done.append(f"{table}.fts and its postings computed again from the text")
    if stale:
        from . import search

        search.forget(conn)  # its terms were read with the configuration of before
    for table in stale_postings(conn, profile):
        with conn.raw.transaction():
            _rebuild_postings(conn.raw, table, profile)
        done.append(f"the postings of {table} computed again for profile {profile}")
    return done


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
