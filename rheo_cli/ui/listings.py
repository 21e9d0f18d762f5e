"""The CLI's listings as tables fitted to the terminal (`tables.print_table`): memories,
open items, turns, sessions and digests, each with a header row; dates people act on
(when an item is due, when a memory or session was last seen) also said relatively.

The REPL and the Telegram bot keep their one-line forms (`items.item_line` and friends)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from .output import local
from .tables import Column, print_table, table_lines
from .when import relative
from .wording import plural


def _flags(item: Any, now: datetime) -> str:
    """``[pinned, expired 2026-05-08] `` before an item's content: what it is besides active
    (a fact past its validity window is expired, with the window's end)."""
    flags = []
    if item.pinned:
        flags.append("pinned")
    state = item.state(now) if hasattr(item, "state") else item.status
    if state == "expired":
        flags.append(f"expired {local(item.valid_until, now, with_time=False)}")
    elif state != "active":
        flags.append(state)
    if item.conflict_with:
        flags.append(f"conflicts with #{item.conflict_with}")
    return f"[{', '.join(flags)}] " if flags else ""


def print_memories(items: Sequence[Any], now: datetime, settings: Any, *, whose: bool) -> None:
    """``rheo memory list``: id, (assistant), category, topic, confidence, when last
    reinforced (relative), content preceded by its flags (pinned, superseded, conflicts)."""
    columns = [Column("id", right=True)]
    columns += [Column("assistant", most=12, shrinks=True)] if whose else []
    columns += [
        Column("category"),
        Column("topic", shrinks=True),
        Column("conf", right=True),
        Column("seen", most=16),
        Column("content", text=True),
    ]
    rows = []
    for item in items:
        row = [f"#{item.id}"] + ([item.assistant or "shared"] if whose else [])
        row += [
            item.category,
            item.topic or "",
            f"{item.effective(now, settings):.2f}",
            relative(item.reinforced_at, now),
            _flags(item, now) + item.content_text(),
        ]
        rows.append(row)
    print_table(columns, rows)


def due_cell(item: Any, now: datetime) -> str:
    """``2026-12-04 (in 2 days)``, ``2026-12-01 (yesterday) OVERDUE``, ``no due date`` for an
    open item (the date in the person's zone)."""
    from ..app.memory import is_overdue  # the engine's facts, loaded only when listing

    if not item.due_at:
        return "no due date"
    day, near = local(item.due_at, now, with_time=False), relative(item.due_at, now)
    due = day if near == day else f"{day} ({near})"
    return due + " OVERDUE" if is_overdue(item, now) else due


def print_open_items(items: Sequence[Any], now: datetime) -> None:
    """``rheo items list``: id, when due (relative, OVERDUE when past), the item (with its
    state when not active)."""
    rows = [
        [
            f"#{item.id}",
            due_cell(item, now),
            item.content_text() + ("" if item.status == "active" else f" [{item.status}]"),
        ]
        for item in items
    ]
    print_table([Column("id", right=True), Column("due", most=40), Column("item", text=True)], rows)


def print_turns(turns: Sequence[Any], now: datetime, numbers: dict[int, int]) -> None:
    """``rheo history``: id, when (local time), session number, role (and status), text; a
    failed reply with no text shows why it failed."""
    rows = []
    for turn in turns:
        role = turn.role + (f" ({turn.status})" if turn.status not in (None, "ok") else "")
        text = turn.content
        if not text and turn.status == "error":
            error = turn.meta.get("error", {})
            text = f"[{error.get('message', 'no reply')}]" if isinstance(error, dict) else "[error]"
        session = numbers.get(turn.session_id, turn.session_id)
        rows.append([f"#{turn.id}", local(turn.ts, now), f"s{session}", role, text])
    columns = [
        Column("id", right=True),
        Column("when"),
        Column("session"),
        Column("role", most=22),
        Column("text", text=True),
    ]
    print_table(columns, rows)


def print_sessions(found: Sequence[Any], now: datetime) -> None:
    """``rheo sessions list``: the lines of `session_lines`, on stdout."""
    sys.stdout.write("".join(line + "\n" for line in session_lines(found, now)))


def session_lines(found: Sequence[Any], now: datetime) -> list[str]:
    """The sessions table (``rheo sessions list``, the REPL's ``/sessions``): number, when it
    started (local time), its last turn (relative: ``today 14:05``, ``3 days ago``), turn
    count; a header line first."""
    rows = [
        [
            f"s{s.number}",
            local(s.started_at, now),
            relative(s.last_turn_at, now, with_time=True),
            plural(s.turns, "turn"),
        ]
        for s in found
    ]
    columns = [Column("session"), Column("started"), Column("last turn"), Column("turns")]
    return table_lines(columns, rows)


def print_digests(digests: Sequence[Any], now: datetime, numbers: dict[int, int]) -> None:
    """``rheo digests list``: id, session number, when the session ended, the narrative (as
    much as the terminal's width holds)."""
    rows = [
        [
            f"#{d.id}",
            f"s{numbers.get(d.session_id, d.session_id)}",
            local(d.ended_at, now),
            d.narrative,
        ]
        for d in digests
    ]
    columns = [
        Column("id", right=True),
        Column("session"),
        Column("ended"),
        Column("narrative", text=True),
    ]
    print_table(columns, rows)
