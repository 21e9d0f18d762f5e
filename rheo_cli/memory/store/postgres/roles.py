"""Each team member's own login on the PostgreSQL store: which database roles may act for which
profiles.

A profile is a tenant. Row-level security on every tenant table (`schema.TENANT_POLICY`,
m009) lets a login see and write a tenant's rows only when the connection set that tenant
(``rheo.tenant``, from ``--profile``) *and* the login may act for it: it owns rheo's tables
(the single-login setup of before, or a superuser), or it — or a role it belongs to — is
granted the profile in ``tenant_grants``. A member may be granted several profiles (a shared
company profile and their own); setting another tenant, through ``rheo --profile other`` or
``SELECT set_config('rheo.tenant', 'other', false)`` in psql, shows that login no row and
lets it write none.

The owner grants and revokes (``rheo team grant ROLE PROFILE`` / ``revoke`` / ``list``): a
grant records the pair and gives the role the table rights rheo needs (``USAGE`` on the
schema; ``SELECT, INSERT, UPDATE, DELETE`` on the tenant tables; ``SELECT`` on the schema
version and the grants; the sequences); revoking a role's last profile takes the rights back.
Roles themselves are the database administrator's (``CREATE ROLE alice LOGIN PASSWORD ...``):
rheo never creates or drops one. ``tenant_grants`` shows a member only its own grants, and
only the owner may change it (its own policy).

psycopg is not imported here: the statements run on the connection `connection.connect` opened.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..api import Grant
from ..errors import InvalidInput, NotFound, StoreError
from ..profiles import check_profile
from ..timeutil import to_stored
from .schema import GRANTS_TABLE, TENANT_TABLES, owner_rights

if TYPE_CHECKING:
    from .connection import PgConnection

READ_ONLY_TABLES = ("schema_migrations", GRANTS_TABLE)
"""Tables a member reads but never writes."""


def quote_ident(name: str) -> str:
    """``name`` as a PostgreSQL identifier (double-quoted, inner quotes doubled)."""
    return '"' + name.replace('"', '""') + '"'


def _grants_table(raw: Any) -> str | None:
    """The schema-qualified name of this schema's ``tenant_grants`` (None before m009)."""
    found = raw.execute(
        "SELECT to_regclass(quote_ident(current_schema()) || %s)", (f".{GRANTS_TABLE}",)
    ).fetchone()[0]
    return None if found is None else str(found)


def login(conn: PgConnection) -> str:
    """The role the connection logged in as (``session_user``)."""
    return str(conn.raw.execute("SELECT session_user").fetchone()[0])


def owner(conn: PgConnection) -> str | None:
    """The role owning rheo's tables (None before m009)."""
    table = _grants_table(conn.raw)
    if table is None:
        return None
    row = conn.raw.execute(
        "SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = %s::regclass", (table,)
    ).fetchone()
    return str(row[0])


def is_owner(conn: PgConnection) -> bool:
    """True when the login owns rheo's tables (is, or belongs to, their owner; a superuser):
    it may act for every profile and grant them."""
    table = _grants_table(conn.raw)
    if table is None:
        return True
    row = conn.raw.execute(
        "SELECT pg_has_role(session_user, relowner, 'MEMBER') FROM pg_class "
        "WHERE oid = %s::regclass",
        (table,),
    ).fetchone()
    return bool(row[0])


def may_act(conn: PgConnection, profile: str) -> bool:
    """Whether the login may act for ``profile``: it owns rheo's tables, or it (or a role it
    belongs to) is granted the profile. The same test row-level security makes. True on a
    store from before m009 (no grants: one login, as then)."""
    raw = conn.raw
    table = _grants_table(raw)
    if table is None:
        return True
    row = raw.execute(
        "SELECT pg_has_role(session_user, c.relowner, 'MEMBER') OR EXISTS (SELECT 1 FROM "
        f"{table} g WHERE g.profile = %s AND pg_has_role(session_user, g.member, 'MEMBER')) "
        "FROM pg_catalog.pg_class c WHERE c.oid = %s::regclass",
        (profile, table),
    ).fetchone()
    return bool(row[0])


def check_granted(conn: PgConnection) -> None:
    """Refuse a connection opened for a profile its login may not act for (`may_act`), in
    one line naming the login, the profile and what the owner runs to grant it. Row-level
    security would show such a connection no row and refuse its writes; this says why
    instead. The empty tenant (no profile: the team commands) is not checked. Raises
    StoreError."""
    tenant = str(getattr(conn, "tenant", "") or "")
    if not tenant:
        return
    try:
        allowed = may_act(conn, tenant)
    except Exception:  # noqa: BLE001 - the driver's refusal: no rights on rheo's schema at all
        allowed = False
    if not allowed:
        who = login(conn)
        raise StoreError(
            f"the login {who} is not granted profile {tenant!r} on this database (its owner "
            f"grants it with: rheo team grant {who} {tenant})"
        )


def grants(conn: PgConnection) -> list[Grant]:
    """The grants the login may see, by role then profile: every grant for the owner, its
    own (and its roles') for a member. [] before m009."""
    table = _grants_table(conn.raw)
    if table is None:
        return []
    rows = conn.raw.execute(
        f"SELECT member::text, profile, granted_at FROM {table} ORDER BY 1, 2"
    ).fetchall()
    return [Grant(str(r[0]), str(r[1]), str(r[2])) for r in rows]


def _require_owner(conn: PgConnection, what: str) -> str:
    """The grants table's name; raises InvalidInput unless the login owns rheo's tables."""
    table = _grants_table(conn.raw)
    if table is None:
        raise StoreError("this database's schema predates member logins: any rheo command run "
                         "by its owner upgrades it")  # fmt: skip
    if not is_owner(conn):
        raise InvalidInput(
            f"only the owner of rheo's tables ({owner(conn)}) may {what}; this login is "
            f"{login(conn)}"
        )
    return table


def _role_oid(conn: PgConnection, member: str) -> int:
    row = conn.raw.execute("SELECT oid FROM pg_roles WHERE rolname = %s", (member,)).fetchone()
    if row is None:
        raise NotFound(
            f"no role {member!r} on this server (a database administrator creates it: "
            f"CREATE ROLE {quote_ident(member)} LOGIN PASSWORD '...')"
        )
    return int(row[0])


def grant_rights(raw: Any, member: str) -> None:
    """Give ``member`` the table rights rheo needs in the current schema (run by the owner,
    inside its transaction): using the schema, reading and writing the tenant tables (their
    policies still decide which rows), reading the schema version and the grants, drawing
    ids. Raises StoreError when the role still may not use the schema (its owner is another
    role, who must grant that)."""
    who = quote_ident(member)
    name = str(raw.execute("SELECT current_schema()").fetchone()[0])
    schema = quote_ident(name)
    raw.execute(f"GRANT USAGE ON SCHEMA {schema} TO {who}")  # only a warning when not allowed
    if not raw.execute("SELECT has_schema_privilege(%s, %s, 'USAGE')", (member, name)).fetchone()[
        0
    ]:
        keeper = raw.execute(
            "SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = %s", (name,)
        ).fetchone()[0]
        raise StoreError(
            f"role {member} may not use schema {name}, and this login may not let it: the "
            f"schema's owner ({keeper}) runs GRANT USAGE ON SCHEMA {schema} TO {who}"
        )
    present = {
        r[0]
        for r in raw.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
            "AND relkind = 'r'"
        ).fetchall()
    }
    tables = ", ".join(t for t in TENANT_TABLES if t in present)
    raw.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON {tables} TO {who}")
    raw.execute(f"GRANT SELECT ON {', '.join(READ_ONLY_TABLES)} TO {who}")
    raw.execute(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {schema} TO {who}")


def revoke_rights(raw: Any, member: str) -> None:
    """Take back every right on the current schema's tables, sequences and the schema itself
    from ``member`` (run by the owner)."""
    who = quote_ident(member)
    schema = quote_ident(str(raw.execute("SELECT current_schema()").fetchone()[0]))
    raw.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM {who}")
    raw.execute(f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA {schema} FROM {who}")
    raw.execute(f"REVOKE ALL ON SCHEMA {schema} FROM {who}")


def regrant_members(raw: Any) -> None:
    """Give every granted role that still exists the rights of `grant_rights` again (after a
    migration added a table), in the caller's transaction, as the tables' owner."""
    table = _grants_table(raw)
    if table is None:
        return
    rows = raw.execute(
        f"SELECT DISTINCT r.rolname FROM {table} g JOIN pg_roles r ON r.oid = g.member"
    ).fetchall()
    for (member,) in rows:
        grant_rights(raw, str(member))


def grant(conn: PgConnection, member: str, profile: str, *, now: datetime) -> bool:
    """Let the login role ``member`` act for ``profile`` (run by the owner; ``now`` dates the
    grant). Returns False when it already could. Raises InvalidInput (not the owner, a bad
    profile name), NotFound (no such role)."""
    check_profile(profile)
    table = _require_owner(conn, "grant profiles")
    oid = _role_oid(conn, member)
    raw = conn.raw
    with owner_rights(conn), raw.transaction():
        added = raw.execute(
            f"INSERT INTO {table}(profile, member, granted_at) VALUES (%s, %s::oid::regrole, %s) "
            "ON CONFLICT DO NOTHING",
            (profile, oid, to_stored(now)),
        ).rowcount
        grant_rights(raw, member)
    return bool(added)


def revoke(conn: PgConnection, member: str, profile: str) -> bool:
    """Take ``profile`` back from ``member`` (run by the owner); the role's last profile
    takes its table rights with it. A role dropped since it was granted is named as
    ``list`` shows it. Returns False when it had no such grant. Raises InvalidInput (not the
    owner)."""
    check_profile(profile)
    table = _require_owner(conn, "revoke profiles")
    raw = conn.raw
    with owner_rights(conn), raw.transaction():
        removed = raw.execute(
            f"DELETE FROM {table} WHERE profile = %s AND member::text = %s", (profile, member)
        ).rowcount
        left = raw.execute(
            f"SELECT count(*) FROM {table} WHERE member::text = %s", (member,)
        ).fetchone()[0]
        exists = raw.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (member,)).fetchone()
        if removed and not left and exists:
            revoke_rights(raw, member)
    return bool(removed)
