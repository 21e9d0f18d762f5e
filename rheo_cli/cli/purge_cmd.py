"""``rheo purge``: erase a turn, a session, a memory item or a whole profile for good."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import UsageError
from ..ui.output import echo, print_json
from .errors import command, say_error
from .options import MAX_ID, Json, Profile
from .state import runtime_for

WHAT_HELP = "turn, session, memory (an item) or profile."


def _confirm(question: str) -> bool:
    """Ask on the terminal; refuse (UsageError) when there is no terminal to ask on."""
    if sys.stdin is None or not sys.stdin.isatty():
        raise UsageError("purge erases for good: confirm on a terminal, or pass --yes")
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def _scrub_input_history(path: object, texts: set[str]) -> int:
    """Drop entries whose text is one of ``texts`` from a prompt-toolkit history file;
    returns how many were dropped."""
    from pathlib import Path

    file = Path(str(path))
    if not texts or not file.exists():
        return 0
    kept: list[list[str]] = []
    dropped = 0
    entry: list[str] = []
    for line in file.read_text(encoding="utf-8", errors="surrogateescape").splitlines():
        if line.startswith("#") and entry and not entry[-1].startswith("#"):
            kept.append(entry)
            entry = []
        entry.append(line)
    if entry:
        kept.append(entry)
    out: list[str] = []
    for block in kept:
        text = "\n".join(ln[1:] for ln in block if ln.startswith("+"))
        if text in texts:
            dropped += 1
            continue
        out.extend(block)
    if dropped:
        file.write_text("\n".join(out) + "\n", encoding="utf-8", errors="surrogateescape")
    return dropped


@command
def purge(
    what: Annotated[str, typer.Argument(help=WHAT_HELP, metavar="WHAT")],
    ref: Annotated[
        str | None,
        typer.Argument(help="The id (turn, session, memory) or the profile's name.", metavar="ID"),
    ] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """Erase for good: a turn, a session, a memory item, or a whole profile.

    Unlike 'memory forget', nothing is kept: the content leaves the tables, the search
    indexes and the file itself (freed space is overwritten and the file compacted; on
    PostgreSQL the touched tables are rewritten). What was learnt from a purged turn goes
    with it. A tombstone records what was erased and when.

    \b
    Examples:
      rheo purge turn 42
      rheo purge profile old-job --yes
    """
    from ..memory import purge as engine
    from ..memory.ledger import turns as ledger

    what = what.strip().lower()
    if what not in engine.WHATS:
        raise UsageError(f"purge what? use one of {', '.join(engine.WHATS)}, not {what!r}")
    ref_id: int | None = None
    if what == "profile":
        if ref is not None:
            profile = ref
    else:
        if ref is None or not ref.strip().lstrip("#").isdigit():
            raise UsageError(f"purge {what} needs an id, e.g. 'rheo purge {what} 12'")
        ref_id = int(ref.strip().lstrip("#"))
        if not 1 <= ref_id <= MAX_ID:
            raise UsageError(f"no {what} #{ref_id}")
    rt = runtime_for(profile)
    target = engine.plan(rt.conn, profile=rt.profile, what=what, ref_id=ref_id)
    typed = {
        t.content for t in ledger.get_turns(rt.conn, rt.profile, target.turns) if t.role == "user"
    }
    if not yes and not _confirm(f"Erase {target.describe()} for good? This cannot be undone."):
        say_error("nothing erased")
        raise typer.Exit(1)
    done = engine.purge(rt.conn, target, now=rt.now())
    history = rt.paths.history
    if what == "profile":
        history.unlink(missing_ok=True)
    else:
        _scrub_input_history(history, typed)
    if json_out:
        print_json(
            {
                "purged": done.ref,
                "profile": rt.profile,
                "counts": done.counts,
                "vacuumed": done.vacuumed,
                "wal_truncated": done.wal_truncated,
                **({"not_rewritten": done.not_rewritten} if rt.store_url else {}),
            }
        )
        return
    counts = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in done.counts.items() if n)
    what = f"{done.ref} of profile {rt.profile}"
    if done.ref == "profile":
        what = f"profile {rt.profile}"
    echo(f"purged {what}: {counts or 'nothing else'}")
    if rt.store_url:
        if not done.vacuumed:
            tables = ", ".join(done.not_rewritten)
            say_error(
                f"note: another session was using {tables or 'the tables'} (or held an older "
                "transaction), so their files may still hold the text until the tables' owner "
                f"runs VACUUM FULL on {tables or 'them'}"
            )
    elif not done.vacuumed or not done.wal_truncated:
        say_error(
            "note: another process holds the database, so the file could not be compacted "
            "yet; freed space is overwritten, and the next purge compacts it"
        )
