"""Shell completion of values: profile names, memory ids, session numbers, config keys.

Called by typer while the shell asks for completions (``_RHEO_COMPLETE`` set). Each reads the
store only when it already exists (completion never creates a database) and returns nothing
rather than fail: a broken store must not break the person's shell.
"""

from __future__ import annotations

import os
from typing import Any


def _profile_of(ctx: Any) -> str:
    while ctx is not None:
        value = (getattr(ctx, "params", None) or {}).get("profile")
        if value:
            return str(value)
        ctx = getattr(ctx, "parent", None)
    return os.environ.get("RHEO_PROFILE", "").strip() or "default"


def _open() -> Any:
    from ..memory.store import db
    from ..paths import resolve

    path = resolve("default").db
    if not path.exists():
        return None
    return db.open_store(path)


def profiles(incomplete: str) -> list[str]:
    """Profile names that have anything stored and start with ``incomplete``."""
    try:
        conn = _open()
        if conn is None:
            return []
        from ..memory.store.profiles import list_profiles

        try:
            return [p for p in list_profiles(conn) if p.startswith(incomplete)]
        finally:
            conn.close()
    except Exception:  # noqa: BLE001 - completion never fails loudly
        return []


def _items(ctx: Any, incomplete: str, category: str | None) -> list[tuple[str, str]]:
    try:
        conn = _open()
        if conn is None:
            return []
        from ..memory.facts import items
        from ..ui.output import preview

        try:
            found = items.list_items(conn, _profile_of(ctx), category=category, limit=200)
        finally:
            conn.close()
        return [
            (str(i.id), preview(i.content_text(), 50))
            for i in found
            if str(i.id).startswith(incomplete.lstrip("#"))
        ]
    except Exception:  # noqa: BLE001
        return []


def memory_ids(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """Active memory ids of the profile being completed, each with a preview as its help."""
    return _items(ctx, incomplete, None)


def open_item_ids(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """Active open-item ids (for ``rheo items done``), each with a preview."""
    return _items(ctx, incomplete, "open_item")


def session_numbers(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """The profile's session numbers, newest first, with their start time as help."""
    try:
        conn = _open()
        if conn is None:
            return []
        from ..clock import from_env
        from ..memory.ledger import sessions
        from ..memory.store.timeutil import display

        now = from_env()()
        try:
            found = sessions.list_sessions(conn, _profile_of(ctx), limit=50)
        finally:
            conn.close()
        return [
            (str(s.number), f"{display(s.started_at, now.tzinfo)}, {s.turns} turns")
            for s in found
            if str(s.number).startswith(incomplete.lstrip("s"))
        ]
    except Exception:  # noqa: BLE001
        return []


def config_keys(incomplete: str) -> list[tuple[str, str]]:
    """Settings ``rheo config set`` knows, with what each means."""
    from ..config_keys import ASSISTANT, KEYS

    return [
        (k.name, k.help) for k in KEYS if k.name.startswith(incomplete) and k.section != ASSISTANT
    ]
