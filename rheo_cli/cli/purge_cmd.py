"""``rheo purge``: erase a turn, a session, a memory item or a whole profile for good (the
application layer's `app.purge`; this command asks first and says what was done)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import UsageError
from ..ui.output import echo, print_json
from ..ui.wording import counted
from .errors import command, say_error
from .options import MAX_ID, Json, Profile
from .state import runtime_for

if TYPE_CHECKING:
    from ..app.purge import Done

WHAT_HELP = "turn, session, memory (an item) or profile."


def _confirm(question: str) -> bool:
    """Ask on the terminal; refuse (UsageError) when there is no terminal to ask on."""
    if sys.stdin is None or not sys.stdin.isatty():
        raise UsageError("purge erases for good: confirm on a terminal, or pass --yes")
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def _parse_ref(what: str, ref: str | None) -> int:
    """The number in ``ref`` (``12``, ``#12``; a session also ``s12``); UsageError otherwise."""
    text = (ref or "").strip().lower().lstrip("#")
    if what == "session":
        text = text.removeprefix("s")
    example = "s3" if what == "session" else "12"
    if not text.isascii() or not text.isdigit():
        raise UsageError(f"purge {what} needs its number, e.g. 'rheo purge {what} {example}'")
    number = int(text)
    if not 1 <= number <= MAX_ID:
        raise UsageError(f"no {what} {'s' if what == 'session' else '#'}{number}")
    return number


@command
def purge(
    what: Annotated[str, typer.Argument(help=WHAT_HELP, metavar="WHAT")],
    ref: Annotated[
        str | None,
        typer.Argument(
            help="The turn or memory id, the session's number (s3), or the profile's name.",
            metavar="ID",
        ),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """Erase for good: a turn, a session, a memory item, or a whole profile.

    Unlike 'memory forget', nothing is kept: the content leaves the tables, the search
    indexes and the file itself (freed space is overwritten and the file compacted; on
    PostgreSQL the touched tables are rewritten). What was learnt from a purged turn goes
    with it: the facts it stated, the digest of its session (written again from the turns
    left), the history entries that quote it; and what it did is undone — a fact it replaced
    or an open item it closed comes back, its reinforcements are taken back. A tombstone
    records what was erased and when (with the records' content keys, never the text), so
    'rheo import' of an older export leaves them out.

    Backups and exports made before the purge still hold the text: the result names those
    rheo wrote that still exist. Delete them to erase it everywhere.

    A session is named by the number 'rheo sessions list' shows (s3, or just 3); numbers
    never shift, so a purged session leaves a gap.

    \b
    Examples:
      rheo purge turn 42
      rheo purge session s3
      rheo purge profile old-job --yes
    """
    from ..app import purge as purging

    what = purging.check_what(what)
    number: int | None = None
    if what == "profile":
        if ref is not None:
            profile = ref
    else:
        number = _parse_ref(what, ref)
    with runtime_for(profile) as app:
        planned = purging.plan(app, what, number)
        if not yes and not _confirm(
            f"Erase {planned.subject} for good? This cannot be undone (earlier backups and "
            "exports keep their copy)."
        ):
            say_error("nothing erased")
            raise typer.Exit(1)
        done = purging.execute(app, planned)
    if json_out:
        print_json(_json(done))
        return
    _say(done)


def _json(done: Done) -> dict[str, object]:
    """``rheo purge --json``: what was purged, counts, compaction, the earlier copies."""
    purged = done.purged
    return {
        "purged": purged.ref,
        "profile": done.profile,
        "counts": purged.counts,
        "vacuumed": purged.vacuumed,
        "wal_truncated": purged.wal_truncated,
        **({"not_rewritten": purged.not_rewritten} if purged.not_rewritten is not None else {}),
        "earlier_copies": done.earlier,
    }


def _say(done: Done) -> None:
    """What was purged on stdout; on stderr whether the store could be compacted and which
    earlier copies still hold the text."""
    purged = done.purged
    counts = counted(purged.counts)
    what = f"{purged.ref} of profile {done.profile}"
    if purged.ref == "profile":
        what = f"profile {done.profile}"
    echo(f"purged {what}: {counts or 'nothing else'}")
    if purged.note:  # what the store's compaction left to do
        say_error(f"note: {purged.note}")
    say_error(_copies_note(done.earlier, server=done.server))


def _copies_note(earlier: list[str], *, server: bool) -> str:
    """The note that copies made before the purge still hold the text: those rheo wrote
    (``earlier``, newest first; the first `app.copies.SHOWN` named), and on PostgreSQL the
    server's own."""
    from ..app.copies import SHOWN

    where = "; the server's own backups, archived WAL and replicas may too" if server else ""
    if not earlier:
        return (
            "note: backups and exports made before this purge still hold what it erased "
            f"(rheo wrote none that still exist{where})"
        )
    named = ", ".join(earlier[:SHOWN])
    more = f" and {len(earlier) - SHOWN} more" if len(earlier) > SHOWN else ""
    return (
        "note: backups and exports made before this purge still hold what it erased; "
        f"rheo wrote these, which still exist: {named}{more}{where} (delete them to erase "
        "it everywhere)"
    )
