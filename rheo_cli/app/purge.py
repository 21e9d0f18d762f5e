"""``rheo purge``: erase a turn, a session, a memory item or a whole profile for good.

`plan` finds what a purge would erase and says it in words for the confirmation; `execute`
erases it (`memory.purge`), drops the person's purged messages from the REPL's input history
(the whole file for a profile) and names the copies rheo wrote earlier that still hold the
text (`copies`). Asking the person to confirm is the front end's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UsageError
from ..memory import purge as engine
from ..memory.facts import items
from ..memory.ledger import sessions
from ..memory.ledger import turns as ledger
from ..memory.purge import Purged, Target
from . import copies
from .app import App
from .text import safe

__all__ = ["WHATS", "Done", "Plan", "Purged", "Target", "check_what", "execute", "plan"]

WHATS = engine.WHATS
"""What can be purged: ``turn``, ``session``, ``memory`` (an item), ``profile``."""


@dataclass
class Plan:
    """What a purge will erase: the engine's ``target`` (ids), ``subject`` in words for the
    confirmation (``session s2 ("plan the trip to…"): 4 turns``), ``shown`` the session's
    number as the person sees it (``session s2``; ``""`` for the rest), and ``typed`` the
    person's own messages among the purged turns."""

    target: Target
    subject: str
    shown: str = ""
    typed: set[str] = field(default_factory=set)


@dataclass
class Done:
    """What a purge did: the engine's ``purged`` (its ``ref`` as the person names it, counts
    per kind, whether the store was compacted), the ``profile``, ``earlier`` copies rheo
    wrote that still hold the text (absolute paths, newest first) and ``server`` (True on
    PostgreSQL, whose own backups may hold it too)."""

    purged: Purged
    profile: str
    earlier: list[str]
    server: bool


def check_what(what: str) -> str:
    """``what`` as one of `WHATS` (case and spaces ignored); raises UsageError otherwise."""
    name = what.strip().lower()
    if name not in WHATS:
        raise UsageError(f"purge what? use one of {', '.join(WHATS)}, not {name!r}")
    return name


def plan(app: App, what: str, number: int | None) -> Plan:
    """What purging ``what`` (one of `WHATS`) would erase in ``app``'s profile: the turn or
    memory item with id ``number``, the session shown as ``s<number>``, or (``number``
    None) the whole profile. Raises NotFound (app.errors) when there is no such record or
    the profile has nothing stored."""
    shown = ""
    ref_id = number
    if what == "session":
        assert number is not None
        shown = f"session s{number}"  # the number the person sees, never the store's id
        ref_id = sessions.session_by_number(app.conn, app.profile, number).id
    target = engine.plan(app.conn, profile=app.profile, what=what, ref_id=ref_id)
    said = [t for t in ledger.get_turns(app.conn, app.profile, target.turns) if t.role == "user"]
    return Plan(
        target=target,
        subject=_describe(app, target, shown, said[0].content if said else ""),
        shown=shown,
        typed={t.content for t in said},
    )


def _describe(app: App, target: Target, shown: str, first: str) -> str:
    """The confirmation's subject: what will be erased, by the number the person sees and its
    first words (of ``first``, the first message purged, else the item's label), with counts."""
    detail = target.describe()
    if target.what == "profile":
        return detail
    words = ""
    if first:
        words = _first_words(first)
    elif target.what == "memory" and target.ref_id is not None:
        words = _first_words(items.get_item(app.conn, app.profile, target.ref_id).label)
    head = shown or detail.split(":", 1)[0]
    counts = detail.split(": ", 1)[1] if ": " in detail else ""
    quoted = f' ("{safe(words)}")' if words else ""
    return f"{head}{quoted}: {counts}" if counts else f"{head}{quoted}"


def _first_words(text: str, words: int = 8) -> str:
    """The first ``words`` words of ``text`` on one line, marked with … when cut."""
    parts = text.split()
    head = " ".join(parts[:words])
    return head + ("…" if len(parts) > words else "")


def execute(app: App, planned: Plan) -> Done:
    """Erase what ``planned`` names, for good, in one transaction (then compact the store),
    and drop the person's purged messages from the REPL's input history (a profile's: the
    whole file). Raises StoreError (DatabaseError) when the store cannot be written (nothing
    is erased then)."""
    done = engine.purge(app.conn, planned.target, now=app.now())
    if planned.shown:
        done.ref = planned.shown
    if planned.target.what == "profile":
        app.paths.history.unlink(missing_ok=True)
    else:
        scrub_input_history(app.paths.history, planned.typed)
    return Done(
        purged=done,
        profile=app.profile,
        earlier=copies.holding(app.paths, app.profile),
        server=app.store_class.server_keeps_copies,
    )


def scrub_input_history(file: Path, texts: set[str]) -> int:
    """Drop entries whose text is one of ``texts`` from a prompt-toolkit history file;
    returns how many were dropped (0 when the file does not exist)."""
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
