"""``rheo paths``: where rheo keeps a profile's files — the database (on PostgreSQL its URL,
password hidden), config.toml and the REPL's input history. Works when config.toml is the
thing that is broken: it is read only for the store's URL."""

from __future__ import annotations

import os
from pathlib import Path

from .. import config as config_mod
from ..errors import ConfigError
from ..memory.text.safety import redact_url
from ..paths import resolve
from .app import profile_name


def locations(profile: str | None = None) -> dict[str, str]:
    """``{"db", "config", "history"}`` for ``profile`` (None: ``RHEO_PROFILE``, else the
    default) as absolute path strings; ``db`` is the store's URL with its password hidden
    when memory lives in PostgreSQL. Raises UsageError for a bad profile name."""
    found = resolve(profile_name(profile))
    info = found.to_json()
    url = _store_url(found.config)
    if url:  # memory lives in PostgreSQL: there is no local database file
        info["db"] = redact_url(url)
    return info


def _store_url(config: Path) -> str | None:
    """``RHEO_DATABASE_URL``, else ``[store] url`` of config.toml when the file can be read
    (a broken file is reported by the commands that use it, not here)."""
    url = os.environ.get("RHEO_DATABASE_URL", "").strip()
    if url:
        return url
    try:
        return config_mod.load(config).store_url
    except ConfigError:
        return None
