"""``rheo memory ...`` and ``rheo items ...``: see, correct, pin, resolve and forget memories."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import RheoError, UsageError
from ..ui.items import item_line
from ..ui.output import local, preview, print_json, safe
from .errors import command
from .options import MAX_ID, Json, Limit, Profile
from .state import runtime_for

app = typer.Typer(
    rich_markup_mode=None,
    help="Durable facts rheo remembers: list, show, correct, forget.",
    no_args_is_help=True,
)
items_app = typer.Typer(
    rich_markup_mode=None, help="Open items: commitments rheo follows up on.", no_args_is_help=True
)

ItemId = Annotated[
    int,
    typer.Argument(min=1, max=MAX_ID, help="Memory item id (see 'rheo memory list')."),
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
) -> None:
    """List active memories, most confident first (with --all: every item, newest first)."""
    from ..memory.facts import items

    if category is not None and category not in items.CATEGORIES:
        raise UsageError(f"unknown category {category!r}; use one of {', '.join(items.CATEGORIES)}")
    rt = runtime_for(profile)
    now = rt.now()
    found = items.list_items(
        rt.conn, rt.profile, statuses=None if all_ else ("active",), category=category
    )
    if not all_:
        found.sort(key=lambda i: (-i.effective(now, rt.settings), -i.id))
    if json_out:
        print_json([i.to_json(now, rt.settings) for i in found])
        return
    if not found:
        print("(no memories)")
        return
    for item in found:
        print(item_line(item, now, rt.settings))


@app.command()
@command
def show(item_id: ItemId, json_out: Json = False, profile: Profile = None) -> None:
    """Show one memory, every version of it and its whole history."""
    from ..memory.facts import curation, events, items

    rt = runtime_for(profile)
    now = rt.now()
    item = items.get_item(rt.conn, rt.profile, item_id)
    history = events.history(rt.conn, rt.profile, item_id)
    versions = curation.supersede_chain(rt.conn, rt.profile, item_id)
    if json_out:
        print_json(
            {
                **item.to_json(now, rt.settings),
                "history": [e.to_json() for e in history],
                "versions": sorted(v.id for v in versions),
            }
        )
        return
    state = item.status + (", pinned" if item.pinned else "")
    print(f"#{item.id}  {item.category} · topic: {item.topic} · {state}")
    print(safe(item.content_text()))
    print(
        f"confidence {item.effective(now, rt.settings):.2f} now (stored {item.confidence:.2f}), "
        f"{item.reinforcements} mention{'s' if item.reinforcements != 1 else ''}, "
        f"last {local(item.reinforced_at, now)}"
    )
    source = f"{item.source}" + (f", turn #{item.source_turn_id}" if item.source_turn_id else "")
    print(f"source: {source} · created {local(item.created_at, now)}")
    if item.due_at:
        print(f"due: {local(item.due_at, now)}")
    if item.reason:
        print(f"reason: {safe(item.reason)}")
    if item.conflict_with:
        print(
            f"conflict: contradicts #{item.conflict_with} (rheo memory resolve {item.id} "
            f"keeps this one)"
        )
    if len(versions) > 1:
        ordered = sorted(versions, key=lambda v: v.id)
        print(
            "versions, oldest first: "
            + ", ".join(
                f"#{v.id}" + (" (this one)" if v.id == item.id else f" {v.status}") for v in ordered
            )
        )
    print("history:")
    for e in history:
        turn = f" (turn #{e.source_turn_id})" if e.source_turn_id else ""
        print(f"  {local(e.ts, now)}  {e.kind:<16} {safe(e.cause)}{turn}")


@app.command()
@command
def search(
    query: Annotated[str, typer.Argument(help="Words to find in topics and contents.")],
    all_: Annotated[bool, typer.Option("--all", help="Include inactive items.")] = False,
    limit: Limit = 20,
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """Find memories whose topic or content match QUERY."""
    from ..memory.facts import items

    rt = runtime_for(profile)
    now = rt.now()
    found = items.search_items(
        rt.conn, rt.profile, query, statuses=None if all_ else ("active",), limit=limit
    )
    if json_out:
        print_json([i.to_json(now, rt.settings) for i, _ in found])
        return
    if not found:
        print("(no memories)")
    for item, _ in found:
        print(item_line(item, now, rt.settings))


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
    category: Annotated[str, typer.Option("--category", "-c")] = "fact",
    confidence: Annotated[float | None, typer.Option("--confidence", min=0.0, max=1.0)] = None,
    pin: Annotated[bool, typer.Option("--pin", help="Always remember it.")] = False,
    due: Annotated[
        str | None, typer.Option("--due", help="Deadline (ISO 8601), for open items.")
    ] = None,
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """Add a memory by hand (or reinforce the same fact, or replace one on the topic).

    Only the same fact, word for word up to case, punctuation, articles and plurals,
    reinforces; anything else on the topic supersedes (the old one is kept). A pinned fact is
    replaced only by a confident one (--confidence 0.8 or more, the default)."""
    from ..memory.facts.remember import Fact, remember
    from ..memory.store.errors import InvalidInput
    from ..memory.store.timeutil import parse_instant, to_stored

    rt = runtime_for(profile)
    due_at = None
    if due:
        zone = rt.now().tzinfo
        try:
            # A date alone means the end of that day in the person's time zone.
            moment = parse_instant(due if "T" in due else f"{due}T23:59:00", default_tz=zone)
            due_at = to_stored(moment)
        except InvalidInput:
            raise UsageError(
                f"--due {due!r} is not a date: use YYYY-MM-DD or an ISO 8601 date-time"
            ) from None
    outcome = remember(
        rt.conn,
        Fact(
            category=category,
            topic=topic,
            label=text,
            confidence=confidence,
            pinned=pin,
            reason="added by the person",
            due_at=due_at,
        ),
        source="manual",
        now=rt.now(),
        settings=rt.settings,
        profile=rt.profile,
    )
    if outcome.item is None:
        # Refused (a pinned fact kept over a less confident one): say so, exit 1.
        raise RheoError(outcome.describe())
    if json_out:
        print_json(
            {
                "action": outcome.action,
                "item": outcome.item.to_json(rt.now(), rt.settings),
                "superseded": outcome.previous.id if outcome.previous else None,
                "conflict": outcome.conflict,
                "evicted": list(outcome.evicted),
            }
        )
        return
    print(outcome.describe())


def _state_change(action: str, item_id: int, profile: str | None, json_out: bool) -> None:
    from ..memory.facts import curation

    rt = runtime_for(profile)
    item = curation.CHANGES[action](rt.conn, rt.profile, item_id, rt.now())
    if json_out:
        print_json(item.to_json(rt.now(), rt.settings))
        return
    words = {
        "pin": "pinned",
        "unpin": "unpinned",
        "forget": "forgotten (history kept)",
        "resolve": "kept; the other version is superseded",
        "done": "marked done",
    }
    print(f"#{item.id} {words[action]}: {preview(item.content_text(), 80)}")


@app.command()
@command
def pin(item_id: ItemId, json_out: Json = False, profile: Profile = None) -> None:
    """Always remember this one: confidence 1.0, no decay, never evicted."""
    _state_change("pin", item_id, profile, json_out)


@app.command()
@command
def unpin(item_id: ItemId, json_out: Json = False, profile: Profile = None) -> None:
    """Let this memory decay and be evicted like the others again."""
    _state_change("unpin", item_id, profile, json_out)


@app.command()
@command
def forget(item_id: ItemId, json_out: Json = False, profile: Profile = None) -> None:
    """Retract a memory: no longer used or learnt again; its history is kept."""
    _state_change("forget", item_id, profile, json_out)


@app.command()
@command
def conflicts(json_out: Json = False, profile: Profile = None) -> None:
    """List contradicting pairs of confident facts awaiting your decision."""
    from ..memory.facts import curation

    rt = runtime_for(profile)
    now = rt.now()
    pairs = curation.conflicts(rt.conn, rt.profile)
    if json_out:
        print_json(
            [
                {"newer": a.to_json(now, rt.settings), "older": b.to_json(now, rt.settings)}
                for a, b in pairs
            ]
        )
        return
    if not pairs:
        print("(no conflicts)")
        return
    for newer, older in pairs:
        print(f"topic {newer.topic}:")
        print(f"  newer #{newer.id}: {preview(newer.content_text(), 80)}")
        print(f"  older #{older.id}: {preview(older.content_text(), 80)}")
        print(f"  keep one with: rheo memory resolve {newer.id}   (or {older.id})")


@app.command()
@command
def resolve(item_id: ItemId, json_out: Json = False, profile: Profile = None) -> None:
    """Settle a conflict by keeping ITEM_ID; the other version is superseded by it."""
    _state_change("resolve", item_id, profile, json_out)


@items_app.command("list")
@command
def items_list(
    all_: Annotated[bool, typer.Option("--all", help="Include done items.")] = False,
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """List open items (commitments), soonest due first."""
    from ..memory.facts import items

    rt = runtime_for(profile)
    now = rt.now()
    found = items.list_items(
        rt.conn,
        rt.profile,
        category="open_item",
        statuses=("active", "done") if all_ else ("active",),
    )
    found.sort(key=lambda i: (i.status != "active", i.due_at or "9999", i.id))
    if json_out:
        print_json([i.to_json(now, rt.settings) for i in found])
        return
    if not found:
        print("(no open items)")
    for item in found:
        due = f"due {local(item.due_at, now)[:10]}" if item.due_at else "no due date"
        state = "" if item.status == "active" else f"  [{item.status}]"
        print(f"#{item.id:<5} {due:<14} {preview(item.content_text(), 80)}{state}")


@items_app.command()
@command
def done(item_id: ItemId, json_out: Json = False, profile: Profile = None) -> None:
    """Mark an open item done: rheo stops following up on it."""
    _state_change("done", item_id, profile, json_out)
