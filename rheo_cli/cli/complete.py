"""Shell completion of values: profile names, memory ids, session numbers, config keys.

Called by typer while the shell asks for completions (``_RHEO_COMPLETE`` set). Each reads the
store only when it already exists (completion never creates a database) and returns nothing
rather than fail: a broken store must not break the person's shell.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any


def _profile_of(ctx: Any) -> str:
    while ctx is not None:
        value = (getattr(ctx, "params", None) or {}).get("profile")
        if value:
            return str(value)
        ctx = getattr(ctx, "parent", None)
    return os.environ.get("RHEO_PROFILE", "").strip() or "default"


@contextlib.contextmanager
def _opened(profile: str) -> Iterator[Any]:
    """The App of ``profile`` when its store is a SQLite file that exists (None otherwise:
    completion neither creates a store nor reaches a server); closed after."""
    from ..app import app as app_mod
    from ..app.profiles import local_store_exists

    with app_mod.build(profile=profile) as app:
        yield app if local_store_exists(app) else None


def profiles(incomplete: str) -> list[str]:
    """Profile names that have anything stored and start with ``incomplete``."""
    try:
        from ..app.profiles import names

        with _opened("default") as app:
            found = names(app) if app is not None else []
        return [p for p in found if p.startswith(incomplete)]
    except Exception:  # noqa: BLE001 - completion never fails loudly
        return []


def _items(ctx: Any, incomplete: str, open_items_only: bool) -> list[tuple[str, str]]:
    try:
        from ..app.memory import recent
        from ..ui.output import preview

        with _opened(_profile_of(ctx)) as app:
            found = recent(app, open_items_only=open_items_only, limit=200) if app else []
        return [
            (str(i.id), preview(i.content_text(), 50))
            for i in found
            if str(i.id).startswith(incomplete.lstrip("#"))
        ]
    except Exception:  # noqa: BLE001
        return []


def memory_ids(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """Active memory ids of the profile being completed, each with a preview as its help."""
    return _items(ctx, incomplete, False)


def open_item_ids(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """Active open-item ids (for ``rheo items done``), each with a preview."""
    return _items(ctx, incomplete, True)


def session_numbers(ctx: Any, incomplete: str) -> list[tuple[str, str]]:
    """The profile's session numbers, newest first, with their start time as help."""
    try:
        from ..app.history import sessions
        from ..ui.output import local
        from ..ui.wording import plural

        with _opened(_profile_of(ctx)) as app:
            if app is None:
                return []
            found, now = sessions(app, 50), app.now()
        return [
            (str(s.number), f"{local(s.started_at, now)}, {plural(s.turns, 'turn')}")
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
