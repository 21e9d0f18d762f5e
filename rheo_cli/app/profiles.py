"""Profiles as a person meets them: the names that hold anything, and each profile's own
files beside the store (the REPL's input history)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..memory.store import profiles as store_profiles
from ..memory.store.db import ensure_private_dir

if TYPE_CHECKING:
    from .app import App

__all__ = ["history_file", "local_store_exists", "names"]


def names(app: App) -> list[str]:
    """Every profile with a session or a memory item in the App's store, sorted by name (on
    PostgreSQL: those the App's role may see)."""
    return store_profiles.list_profiles(app.conn)


def local_store_exists(app: App) -> bool:
    """True when the App's store is the SQLite file and it exists: what may be read without
    creating anything or reaching a server (shell completion)."""
    return not app.store_url and app.paths.db.exists()


def history_file(app: App) -> Path:
    """The REPL's input history file of the App's profile, created empty and private (0600,
    in a 0700 folder) when missing. Raises OSError when it cannot be."""
    path = app.paths.history
    ensure_private_dir(path.parent)
    if not path.exists():
        old = os.umask(0o077)
        try:
            path.touch(mode=0o600)
        finally:
            os.umask(old)
    return path
