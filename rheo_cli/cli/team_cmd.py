"""``rheo team grant|revoke|list``: which team members' logins may act for which profiles, on a
PostgreSQL store (`memory.store.pg_roles`)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import UsageError
from ..ui.output import echo, print_json, safe
from .errors import command
from .options import Json, Profile
from .state import runtime_for

if TYPE_CHECKING:
    from ..memory.store.pg import PgConnection

app = typer.Typer(
    pretty_exceptions_show_locals=False,
    epilog="Example: rheo team grant alice acme",
    rich_markup_mode=None,
    help="Team logins on PostgreSQL: grant a member's role a profile, revoke it, list them.",
    no_args_is_help=True,
)

RoleArg = Annotated[
    str, typer.Argument(help="A login role of the database server (e.g. alice).", metavar="ROLE")
]
ProfileArg = Annotated[
    str, typer.Argument(help="The profile to grant or revoke.", metavar="PROFILE")
]


def _open(profile: str | None) -> tuple[PgConnection, datetime]:
    """A connection to the configured PostgreSQL store for no profile (it reads no tenant's
    rows; the grants are its only business), and the time now. UsageError on a SQLite
    store."""
    from ..memory.store import db

    rt = runtime_for(profile)
    if not rt.store_url:
        raise UsageError(
            "team logins need memory on PostgreSQL (set RHEO_DATABASE_URL); a SQLite store "
            "belongs to whoever can read its file"
        )
    conn: PgConnection = db.open_url(rt.store_url, tenant="")  # type: ignore[assignment]
    return conn, rt.now()


def _name(text: str, what: str) -> str:
    cleaned = text.strip()
    if not cleaned or any(ord(ch) < 32 or ord(ch) == 127 for ch in cleaned):
        raise UsageError(f"{what} needs a name, e.g. 'rheo team grant alice acme'")
    return cleaned


@app.command()
@command
def grant(member: RoleArg, profile_name: ProfileArg, profile: Profile = None) -> None:
    """Let a member's login role act for a profile (run by the owner of rheo's tables).

    The role must exist on the server (a database administrator creates it: CREATE ROLE
    alice LOGIN PASSWORD '...'). A role may be granted several profiles, a profile several
    roles. The member then connects with their own login, e.g.
    RHEO_DATABASE_URL=postgresql://alice@db.example/rheo rheo --profile acme ask "..."

    \b
    Example:
      rheo team grant alice acme
    """
    from ..memory.store import pg_roles

    member, wanted = _name(member, "grant"), _name(profile_name, "grant")
    conn, now = _open(profile)
    try:
        added = pg_roles.grant(conn, member, wanted, now=now)
    finally:
        conn.close()
    if added:
        echo(f"granted profile {safe(wanted)} to role {safe(member)}")
    else:
        echo(f"role {safe(member)} already had profile {safe(wanted)}")


@app.command()
@command
def revoke(member: RoleArg, profile_name: ProfileArg, profile: Profile = None) -> None:
    """Take a profile back from a member's role (run by the owner of rheo's tables).

    From then on that login sees no row of the profile and may write none; the role's last
    profile takes its rights on rheo's tables with it.

    \b
    Example:
      rheo team revoke alice acme
    """
    from ..memory.store import pg_roles
    from ..memory.store.errors import NotFound

    member, wanted = _name(member, "revoke"), _name(profile_name, "revoke")
    conn, _ = _open(profile)
    try:
        removed = pg_roles.revoke(conn, member, wanted)
    finally:
        conn.close()
    if not removed:
        raise NotFound(f"role {member!r} has no grant of profile {wanted!r}")
    echo(f"revoked profile {safe(wanted)} from role {safe(member)}")


@app.command("list")
@command
def list_(json_out: Json = False, profile: Profile = None) -> None:
    """Show the grants: every one for the owner, a member's own for a member.

    \b
    Example:
      rheo team list
    """
    from ..memory.store import pg_roles

    conn, _ = _open(profile)
    try:
        found = pg_roles.grants(conn)
        owner = pg_roles.owner(conn)
        me = pg_roles.login(conn)
        mine = pg_roles.is_owner(conn)
    finally:
        conn.close()
    if json_out:
        print_json(
            {"login": me, "owner": owner, "is_owner": mine, "grants": [g.to_json() for g in found]}
        )
        return
    echo(f"owner of rheo's tables: {safe(owner or '?')} (every profile)")
    echo(f"this login: {safe(me)}" + (" (the owner)" if mine else ""))
    if not found:
        echo("(no grants)")
        return
    width = max(len(g.member) for g in found)
    for g in found:
        echo(f"{safe(g.member):<{width}}  {safe(g.profile):<20} granted {g.granted_at[:16]}")
