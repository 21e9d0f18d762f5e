"""``rheo paths``: where rheo keeps its files."""

from __future__ import annotations

from pathlib import Path

from ..ui.output import echo, print_json
from .errors import command
from .options import Json, Profile


@command
def paths(json_out: Json = False, profile: Profile = None) -> None:
    """Show the database (its URL, password hidden, when memory is in PostgreSQL), config
    file and REPL history locations.

    \b
    Example:
      rheo paths --json
    """
    import os

    from ..errors import UsageError
    from ..memory.store.errors import InvalidInput
    from ..memory.store.profiles import DEFAULT_PROFILE, check_profile
    from ..paths import resolve
    from .state import GLOBAL

    # Paths must work when config.toml is the thing that is broken: it is read only for the
    # store URL, and a broken file leaves the local paths shown.
    name = profile if profile is not None else GLOBAL.profile
    if name is None:
        name = os.environ.get("RHEO_PROFILE", "").strip() or DEFAULT_PROFILE
    try:
        check_profile(name)
    except InvalidInput as exc:
        raise UsageError(str(exc)) from None
    found = resolve(name)
    info = found.to_json()
    from ..memory import store

    where = _store_url(found.config) or info["db"]  # a server's URL, else the local file
    info["db"] = store.choose(where).shown(where)
    if json_out:
        print_json(info)
        return
    for key, value in info.items():
        echo(f"{key:8} {value}")


def _store_url(config: Path) -> str | None:
    """``RHEO_DATABASE_URL``, else ``[store] url`` of config.toml when the file can be read
    (a broken file is reported by the commands that use it, not here)."""
    import os

    from .. import config as config_mod
    from ..errors import ConfigError

    url = os.environ.get("RHEO_DATABASE_URL", "").strip()
    if url:
        return url
    try:
        return config_mod.load(config).store_url
    except ConfigError:
        return None
