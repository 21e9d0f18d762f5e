"""``rheo doctor``: is the store sound, private and usable? ``--repair`` fixes what it can.

Checks: config.toml and the assistants' prompt files, that a chat provider is ready (never
showing a key), the permissions of rheo's files (0600 files, 0700 folders; the person's own
assistant prompt files there are not rheo's secrets) — `install` — then the store's:
`sqlite` (schema version, integrity, writable, tables, search indexes, sessions, jobs) or
`postgres` (schema, tables, guards, row-level security, extensions, search, sessions, jobs).
Front ends render the `Diagnosis` `diagnose` returns and choose the exit status.
"""

from __future__ import annotations

import os

from ...memory.store.profiles import DEFAULT_PROFILE
from ...paths import resolve
from . import install, postgres, sqlite
from .checks import Check, Diagnosis

__all__ = ["Check", "Diagnosis", "diagnose"]


def diagnose(profile: str | None = None, *, repair: bool = False) -> Diagnosis:
    """Every check of ``profile`` (None or ``""``: ``RHEO_PROFILE``, else the default) and
    its store, after repairs when ``repair``. Works when config.toml, the store or the
    provider is what is broken (each is a problem in the list); the App it builds and the
    store it opens (never migrated unless ``repair``) are closed before it returns. Raises
    sqlite3.Error only when the SQLite store's schema version cannot be read at all."""
    name = profile or os.environ.get("RHEO_PROFILE", "").strip() or DEFAULT_PROFILE
    paths = resolve(name)
    found = Diagnosis()
    setup = install.Installation()
    found.checks += install.config_checks(paths, setup)
    found.checks.append(install.provider_check(name, setup))
    found.checks.append(install.permissions_check(paths.home, setup.own, repair, found.repaired))
    if setup.store_url:
        found.checks += postgres.checks(setup.store_url, name, repair, found.repaired, setup.gap_s)
    else:
        found.checks += sqlite.checks(paths.db, repair, found.repaired, setup.gap_s)
    return found
