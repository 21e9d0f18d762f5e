"""``rheo purge``: erase a turn, a session, a memory item or a whole profile for good."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import UsageError
from ..ui.output import echo, print_json, safe
from . import copies
from .errors import command, say_error
from .options import MAX_ID, Json, Profile
from .state import runtime_for

if TYPE_CHECKING:
    from ..app.app import App as Runtime
    from ..memory.ledger.turns import Turn
    from ..memory.purge import Target

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


def _first_words(text: str, words: int = 8) -> str:
    """The first ``words`` words of ``text`` on one line, marked with … when cut."""
    parts = text.split()
    head = " ".join(parts[:words])
    return head + ("…" if len(parts) > words else "")


def _describe(rt: Runtime, target: Target, shown: str, user_turns: list[Turn]) -> str:
    """The confirmation's subject: what will be erased, by the number the person sees and its
    first words, with counts (``session s2 ("plan the trip to…"): 4 turn(s)``)."""
    from ..memory.facts import items

    detail = target.describe()
    if target.what == "profile":
        return detail
    words = ""
    if user_turns:
        words = _first_words(user_turns[0].content)
    elif target.what == "memory" and target.ref_id is not None:
        words = _first_words(items.get_item(rt.conn, rt.profile, target.ref_id).label)
    head = shown or detail.split(":", 1)[0]
    counts = detail.split(": ", 1)[1] if ": " in detail else ""
    quoted = f' ("{safe(words)}")' if words else ""
    return f"{head}{quoted}: {counts}" if counts else f"{head}{quoted}"


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
    from ..memory import purge as engine
    from ..memory.ledger import sessions
    from ..memory.ledger import turns as ledger

    what = what.strip().lower()
    if what not in engine.WHATS:
        raise UsageError(f"purge what? use one of {', '.join(engine.WHATS)}, not {what!r}")
    ref_id: int | None = None
    if what == "profile":
        if ref is not None:
            profile = ref
    else:
        ref_id = _parse_ref(what, ref)
    rt = runtime_for(profile)
    shown = ""
    if what == "session":
        assert ref_id is not None
        shown = f"session s{ref_id}"  # the number the person sees, never the store's id
        ref_id = sessions.session_by_number(rt.conn, rt.profile, ref_id).id
    target = engine.plan(rt.conn, profile=rt.profile, what=what, ref_id=ref_id)
    user_turns = [
        t for t in ledger.get_turns(rt.conn, rt.profile, target.turns) if t.role == "user"
    ]
    typed = {t.content for t in user_turns}
    question = _describe(rt, target, shown, user_turns)
    if not yes and not _confirm(
        f"Erase {question} for good? This cannot be undone (earlier backups and exports "
        "keep their copy)."
    ):
        say_error("nothing erased")
        raise typer.Exit(1)
    done = engine.purge(rt.conn, target, now=rt.now())
    if shown:
        done.ref = shown
    history = rt.paths.history
    if what == "profile":
        history.unlink(missing_ok=True)
    else:
        _scrub_input_history(history, typed)
    earlier = copies.holding(rt.paths, rt.profile)
    if json_out:
        print_json(
            {
                "purged": done.ref,
                "profile": rt.profile,
                "counts": done.counts,
                "vacuumed": done.vacuumed,
                "wal_truncated": done.wal_truncated,
                **({"not_rewritten": done.not_rewritten} if done.not_rewritten is not None else {}),
                "earlier_copies": earlier,
            }
        )
        return
    counts = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in done.counts.items() if n)
    what = f"{done.ref} of profile {rt.profile}"
    if done.ref == "profile":
        what = f"profile {rt.profile}"
    echo(f"purged {what}: {counts or 'nothing else'}")
    if done.note:  # what the store's compaction left to do
        say_error(f"note: {done.note}")
    say_error(_copies_note(earlier, server=rt.store_class.server_keeps_copies))


def _copies_note(earlier: list[str], *, server: bool) -> str:
    """The note that copies made before the purge still hold the text: those rheo wrote
    (``earlier``, newest first; the first `copies.SHOWN` named), and on PostgreSQL the
    server's own."""
    where = "; the server's own backups, archived WAL and replicas may too" if server else ""
    if not earlier:
        return (
            "note: backups and exports made before this purge still hold what it erased "
            f"(rheo wrote none that still exist{where})"
        )
    named = ", ".join(earlier[: copies.SHOWN])
    more = f" and {len(earlier) - copies.SHOWN} more" if len(earlier) > copies.SHOWN else ""
    return (
        "note: backups and exports made before this purge still hold what it erased; "
        f"rheo wrote these, which still exist: {named}{more}{where} (delete them to erase "
        "it everywhere)"
    )
