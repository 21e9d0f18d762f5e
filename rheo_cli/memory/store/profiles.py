"""Profile names: the tenant key that scopes every row and every query in the store."""

from __future__ import annotations

import re

from .api import Connection
from .errors import InvalidInput

DEFAULT_PROFILE = "default"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_profile(name: str) -> str:
    """Return ``name`` if it is a valid profile name, else raise InvalidInput.

    Valid: 1-64 characters of letters, digits, ``_``, ``.``, ``-``, starting with a letter or
    digit (so it is also safe as a file name for the profile's REPL history).
    """
    if not _NAME.fullmatch(name):
        raise InvalidInput(
            f"invalid profile name {name!r}: use 1-64 letters, digits, '_', '.', '-'"
        )
    return name


def list_profiles(conn: Connection) -> list[str]:
    """Every profile with a session or a memory item in the store, sorted by name."""
    rows = conn.execute(
        "SELECT profile FROM sessions UNION SELECT profile FROM memory_items ORDER BY 1"
    ).fetchall()
    return [r[0] for r in rows]
