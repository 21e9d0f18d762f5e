"""``rheo doctor``: is the store sound, private and usable? ``--repair`` fixes what it can.

Checks: config.toml and the assistants' prompt files, that a chat provider is ready (never
showing a key), the permissions of rheo's files (0600 files, 0700 folders; the person's own
assistant prompt files there are not rheo's secrets) — `install` — then the store's own
(`Store.health`, whichever store it is) and the engine's on it (sessions, jobs) — `store` —
and last the resident rheo's state, its folder and its log's last error — `resident`, which
never starts one.
Front ends render the `Diagnosis` `diagnose` returns and choose the exit status.
"""

from __future__ import annotations

import os

from ...memory.store.profiles import DEFAULT_PROFILE
from ...paths import resolve
from . import install, resident, store
from .checks import Check, Diagnosis

__all__ = ["Check", "Diagnosis", "diagnose"]


def diagnose(profile: str | None = None, *, repair: bool = False) -> Diagnosis:
    """Every check of ``profile`` (None or ``""``: ``RHEO_PROFILE``, else the default) and
    its store, after repairs when ``repair``. Works when config.toml, the store or the
    provider is what is broken (each is a problem in the list); the App it builds and the
    store it opens (never migrated unless ``repair``) are closed before it returns."""
    name = profile or os.environ.get("RHEO_PROFILE", "").strip() or DEFAULT_PROFILE
    paths = resolve(name)
    found = Diagnosis()
    setup = install.Installation()
    found.checks += install.config_checks(paths, setup)
    found.checks.append(install.provider_check(name, setup))
    found.checks.append(install.permissions_check(paths.home, setup.own, repair, found.repaired))
    location = setup.location or str(paths.db)
    found.checks += store.checks(location, name, repair, found.repaired, setup.gap_s)
    found.checks.append(resident.resident_check(paths.home, setup.secrets))
    return found
