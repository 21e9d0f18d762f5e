"""``rheo memory ...`` and ``rheo items ...``: see, correct, pin, resolve and forget memories."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import UsageError
from ..ui.items import conflict_lines
from ..ui.output import echo, local, preview, print_json
from .complete import memory_ids, open_item_ids
from .errors import command
from .group import ListsWhenAlone
from .options import MAX_ID, AssistantOpt, Json, Limit, Profile
from .state import runtime_for

if TYPE_CHECKING:
    from ..app import memory as memory_mod
    from ..app.app import App
    from ..app.memory import MemoryItem

app = typer.Typer(
    cls=ListsWhenAlone,
    epilog="Example: rheo memory list",
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    help="Durable facts rheo remembers: list, show, correct, forget (alone: list them).",
)
items_app = typer.Typer(
    cls=ListsWhenAlone,
    epilog="Example: rheo items list",
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    help="Open items: commitments rheo follows up on (alone: list them).",
)

AllAssistants = Annotated[
    bool,
    typer.Option(
        "--all-assistants",
        help="Every assistant's own memories and the shared ones, with a column saying whose.",
    ),
]


def _scoped(profile: str | None, assistant: str | None, all_assistants: bool) -> App:
    """The App for ``--assistant``/``--all-assistants`` (not both: UsageError). Listings
    then show what ``app.assistant_name`` sees (shared memories plus its own, its own winning
    on a topic; without one: the shared memories), or everything with ``all_assistants``."""
    if all_assistants and assistant is not None:
        raise UsageError("use --assistant or --all-assistants, not both")
    app: App = runtime_for(profile, assistant=assistant)
    return app


ItemId = Annotated[
    int,
    typer.Argument(
        min=1,
        max=MAX_ID,
        help="Memory item id (see 'rheo memory list').",
        autocompletion=memory_ids,
    ),
]
OpenItemId = Annotated[
    int,
    typer.Argument(
        min=1,
        max=MAX_ID,
        help="Open item id (see 'rheo items list').",
        autocompletion=open_item_ids,
    ),
]


@app.command("list")
@command
def list_(
    all_: Annotated[
        bool, typer.Option("--all", help="Include superseded, evicted, retracted and done items.")
    ] = False,
    category: Annotated[
        str | None, typer.Option("--category", "-c", help="Only this category.")
    ] = None,
    json_out: Json = False,
    profile: Profile = None,
    assistant: AssistantOpt = None,
    all_assistants: AllAssistants = False,
) -> None:
    """List active memories, most confident first (with --all: inactive ones too — replaced,
    forgotten, done, and expired: past their validity window — each after the active ones, in
    the same order).

    Those the assistant sees (--assistant, RHEO_ASSISTANT): the shared ones and its own, its
    own winning on a topic; without one, the shared ones.

    \b
    Example:
      rheo memory list --category preference
    """
    from ..app import memory

    with _scoped(profile, assistant, all_assistants) as app:
        found = memory.memories(
            app, inactive=all_, category=category, all_assistants=all_assistants
        )
        _print_items(app, found, json_out, whose=all_assistants)


def _print_items(app: App, found: list[MemoryItem], json_out: bool, *, whose: bool) -> None:
    """A listing of memory items: their JSON, or a table (`listings.print_memories`;
    ``whose``: with the column naming the assistant each is specific to)."""
    now = app.now()
    if json_out:
        print_json([i.to_json(now, app.settings) for i in found])
        return
    if not found:
        echo("(no memories)")
        return
    from ..ui.listings import print_memories

    print_memories(found, now, app.settings, whose=whose)


@app.command()
@command
def show(item_id: ItemId, json_out: Json = False, profile: Profile = None) -> None:
    """Show one memory, every version of it and its whole history.

    \b
    Example:
      rheo memory show 12
    """
    from ..app import memory

    with runtime_for(profile) as app:
        detail = memory.show(app, item_id)
        now, item = app.now(), detail.item
        if json_out:
            print_json(
                {
                    **item.to_json(now, app.settings),
                    "history": [e.to_json() for e in detail.history],
                    "versions": [v.id for v in detail.versions],
                }
            )
            return
        _print_detail(detail, now, item.effective(now, app.settings))


def _print_detail(detail: memory_mod.Detail, now: datetime, confidence: float) -> None:
    """``rheo memory show``'s text: the item, its state, versions and history (local times);
    ``confidence`` is its effective confidence now."""
    item = detail.item
    state = item.state(now) + (", pinned" if item.pinned else "")
    whose = f"{item.assistant} only" if item.assistant else "shared"
    echo(f"#{item.id}  {item.category} · topic: {item.topic} · {whose} · {state}")
    echo(item.content_text())
    echo(
        f"confidence {confidence:.2f} now (stored {item.confidence:.2f}), "
        f"{item.reinforcements} mention{'s' if item.reinforcements != 1 else ''}, "
        f"last {local(item.reinforced_at, now)}"
    )
    source = f"{item.source}" + (f", turn #{item.source_turn_id}" if item.source_turn_id else "")
    echo(f"source: {source} · created {local(item.created_at, now)}")
    if item.due_at:
        echo(f"due: {local(item.due_at, now)}")
    if item.valid_from or item.valid_until:
        since = f"from {local(item.valid_from, now)} " if item.valid_from else ""
        until = f"until {local(item.valid_until, now)}" if item.valid_until else "on"
        echo(f"valid: {since}{until}" + (" (expired)" if item.expired(now) else ""))
    if item.reason:
        echo(f"reason: {item.reason}")
    if item.conflict_with:
        echo(
            f"conflict: contradicts #{item.conflict_with} (rheo memory resolve {item.id} "
            f"keeps this one)"
        )
    if len(detail.versions) > 1:
        echo(
            "versions, oldest first: "
            + ", ".join(
                f"#{v.id}" + (" (this one)" if v.id == item.id else f" {v.status}")
                for v in detail.versions
            )
        )
    echo("history:")
    for e in detail.history:
        turn = f" (turn #{e.source_turn_id})" if e.source_turn_id else ""
        echo(f"  {local(e.ts, now)}  {e.kind:<16} {e.cause}{turn}")


@app.command()
@command
def search(
    query: Annotated[str, typer.Argument(help="Words to find in topics and contents.")],
    all_: Annotated[bool, typer.Option("--all", help="Include inactive items.")] = False,
    limit: Limit = 20,
    json_out: Json = False,
    profile: Profile = None,
    assistant: AssistantOpt = None,
    all_assistants: AllAssistants = False,
) -> None:
    """Find memories whose topic or content match QUERY (among those the assistant sees).

    \b
    Example:
      rheo memory search ana
    """
    from ..app import memory

    with _scoped(profile, assistant, all_assistants) as app:
        found = memory.search(app, query, inactive=all_, limit=limit, all_assistants=all_assistants)
        _print_items(app, found, json_out, whose=all_assistants)


@app.command()
@command
def add(
    text: Annotated[str, typer.Argument(help="The fact, in your words.")],
    topic: Annotated[
        str,
        typer.Option(
            "--topic", "-t", help="Short key; a later fact on the same topic replaces this one."
        ),
    ],
    category: Annotated[
        str | None,
        typer.Option("--category", "-c", help="fact (default), open_item (with --due), ..."),
    ] = None,
    confidence: Annotated[float | None, typer.Option("--confidence", min=0.0, max=1.0)] = None,
    pin: Annotated[bool, typer.Option("--pin", help="Always remember it.")] = False,
    due: Annotated[
        str | None,
        typer.Option(
            "--due",
            metavar="WHEN",
            help="Deadline for an open item: friday, next monday, in 2 weeks, 2026-12-24.",
        ),
    ] = None,
    json_out: Json = False,
    profile: Profile = None,
    assistant: Annotated[
        str | None,
        typer.Option(
            "--assistant",
            "-a",
            metavar="NAME",
            help="Make it specific to assistant NAME (else RHEO_ASSISTANT; default: shared).",
        ),
    ] = None,
) -> None:
    """Add a memory by hand (or reinforce the same fact, or replace one on the topic).

    Only the same fact, word for word up to case, punctuation, articles and plurals,
    reinforces; anything else on the topic supersedes (the old one is kept). A pinned fact is
    replaced only by a confident one (--confidence 0.8 or more, the default).

    \b
    Examples:
      rheo memory add "Ana prefers tea" --topic ana.drink
      rheo memory add "send the report" -t report --due friday   (an open item)
    """
    from ..app import memory
    from .dates import echo as echo_date
    from .dates import resolve_due

    if due is not None and category not in (None, "open_item"):
        raise UsageError(f"--due is for open items, not -c {category}: drop -c or use -c open_item")
    with runtime_for(profile, assistant=assistant) as app:
        now = app.now()
        due_moment = resolve_due(due, now) if due else None
        category = category or ("open_item" if due is not None else "fact")
        # A pinned fact kept over a less confident one is refused: RheoError, exit 1.
        outcome = memory.add(
            app, text, topic, category=category, confidence=confidence, pinned=pin, due=due_moment
        )
        if json_out:
            print_json(_outcome_json(app, outcome))
            return
    echo(outcome.describe())
    if due_moment is not None:
        echo(f"due {echo_date(due_moment, now)}")


def _outcome_json(app: App, outcome: memory_mod.Outcome) -> dict[str, object]:
    """``rheo memory add --json``: what was done, the item now, what it superseded."""
    assert outcome.item is not None  # `memory.add` raises when nothing was stored
    return {
        "action": outcome.action,
        "item": outcome.item.to_json(app.now(), app.settings),
        "superseded": outcome.previous.id if outcome.previous else None,
        "conflict": outcome.conflict,
        "evicted": list(outcome.evicted),
    }


def _state_change(action: str, item_id: int, profile: str | None, json_out: bool) -> None:
    """Make change ``action`` to item ``item_id`` and say what it left (again: a no-op)."""
    from ..app import memory
    from ..ui.wording import change_line

    with runtime_for(profile) as app:
        done = memory.change(app, action, item_id)
        if json_out:
            print_json(done.item.to_json(app.now(), app.settings))
            return
    echo(change_line(action, done.item, already=done.already))


@app.command()
@command
def pin(item_id: ItemId, json_out: Json = False, profile: Profile = None) -> None:
    """Always remember this one: confidence 1.0, no decay, never evicted.

    \b
    Example:
      rheo memory pin 12
    """
    _state_change("pin", item_id, profile, json_out)


@app.command()
@command
def unpin(item_id: ItemId, json_out: Json = False, profile: Profile = None) -> None:
    """Let this memory decay and be evicted like the others again.

    \b
    Example:
      rheo memory unpin 12
    """
    _state_change("unpin", item_id, profile, json_out)


@app.command()
@command
def forget(item_id: ItemId, json_out: Json = False, profile: Profile = None) -> None:
    """Retract a memory: no longer used or learnt again; its history is kept.

    \b
    Example:
      rheo memory forget 12
    """
    _state_change("forget", item_id, profile, json_out)


@app.command()
@command
def conflicts(json_out: Json = False, profile: Profile = None) -> None:
    """List contradicting pairs of confident facts awaiting your decision.

    \b
    Example:
      rheo memory conflicts
    """
    from ..app import memory

    with runtime_for(profile) as app:
        now = app.now()
        pairs = memory.conflicts(app)
        if json_out:
            print_json(
                [
                    {"newer": a.to_json(now, app.settings), "older": b.to_json(now, app.settings)}
                    for a, b in pairs
                ]
            )
            return
    if not pairs:
        echo("(no conflicts)")
    for newer, older in pairs:
        for line in conflict_lines(newer, older, "rheo memory resolve"):
            echo(line)


@app.command()
@command
def resolve(item_id: ItemId, json_out: Json = False, profile: Profile = None) -> None:
    """Settle a conflict by keeping ITEM_ID; the other version is superseded by it.

    \b
    Example:
      rheo memory resolve 14
    """
    _state_change("resolve", item_id, profile, json_out)


@app.command()
@command
def audit(json_out: Json = False, profile: Profile = None) -> None:
    """Check memory: duplicates, facts not said again for months, facts that look like
    secrets, facts a model or a client wrote, and what CURRENT MEMORY costs — each with the
    command that fixes it.

    \b
    Example:
      rheo memory audit
    """
    from ..app.audit import KINDS, audit

    with runtime_for(profile) as app:
        report = audit(app)
    if json_out:
        print_json(report.to_json())
        return
    echo(
        f"profile {report.profile}: {report.facts} active memories; CURRENT MEMORY costs about "
        f"{report.tokens} tokens of the {report.budget}-token budget"
    )
    titles = {
        "duplicate": "duplicates",
        "unreinforced": "not said again for months",
        "secret": "look like secrets",
        "written_for": "written by a model or a client",
        "tokens": "cost",
    }
    for kind in KINDS:
        found = report.of(kind)
        if not found:
            continue
        echo(f"{titles[kind]} ({len(found)}):")
        for finding in found:
            echo(f"  {preview(finding.detail, 100)}")
            echo(f"    fix: {finding.fix}")
    if not report.findings:
        echo("nothing to fix")


@items_app.command("list")
@command
def items_list(
    all_: Annotated[bool, typer.Option("--all", help="Include done items.")] = False,
    json_out: Json = False,
    profile: Profile = None,
    assistant: AssistantOpt = None,
    all_assistants: AllAssistants = False,
) -> None:
    """List open items (commitments), soonest due first (those the assistant sees).

    \b
    Example:
      rheo items list --all
    """
    from ..app import memory

    with _scoped(profile, assistant, all_assistants) as app:
        now = app.now()
        found = memory.open_items(app, done=all_, all_assistants=all_assistants)
        if json_out:
            print_json([i.to_json(now, app.settings) for i in found])
            return
    if not found:
        echo("(no open items)")
        return
    from ..ui.listings import print_open_items

    print_open_items(found, now)


@items_app.command()
@command
def done(item_id: OpenItemId, json_out: Json = False, profile: Profile = None) -> None:
    """Mark an open item done: rheo stops following up on it.

    \b
    Example:
      rheo items done 7
    """
    _state_change("done", item_id, profile, json_out)
