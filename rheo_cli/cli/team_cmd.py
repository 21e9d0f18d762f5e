"""``rheo team grant|revoke|list``: which team members' logins may act for which profiles, on a
PostgreSQL store (`app.team`)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..app.errors import NotFound
from ..errors import UsageError
from ..ui.output import echo, local, print_json, safe
from .errors import command
from .options import Json, Profile
from .state import runtime_for

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
    from ..app import team

    member, wanted = _name(member, "grant"), _name(profile_name, "grant")
    with runtime_for(profile) as rt:
        added = team.grant(rt, member, wanted)
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
    from ..app import team

    member, wanted = _name(member, "revoke"), _name(profile_name, "revoke")
    with runtime_for(profile) as rt:
        removed = team.revoke(rt, member, wanted)
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
    from ..app import team

    with runtime_for(profile) as rt:
        found = team.logins(rt)
        now = rt.now()
    if json_out:
        print_json(
            {
                "login": found.login,
                "owner": found.owner,
                "is_owner": found.is_owner,
                "grants": [g.to_json() for g in found.grants],
            }
        )
        return
    echo(f"owner of rheo's tables: {safe(found.owner or '?')} (every profile)")
    echo(f"this login: {safe(found.login)}" + (" (the owner)" if found.is_owner else ""))
    if not found.grants:
        echo("(no grants)")
        return
    width = max(len(g.member) for g in found.grants)
    for g in found.grants:
        granted = local(str(g.granted_at), now)
        echo(f"{safe(g.member):<{width}}  {safe(g.profile):<20} granted {granted}")
