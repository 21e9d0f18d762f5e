"""``rheo paths``: where rheo keeps its files."""

from __future__ import annotations

from ..ui.output import echo, print_json
from .errors import command
from .options import Json, Profile


@command
def paths(json_out: Json = False, profile: Profile = None) -> None:
    """Show the database, config file and REPL history locations.

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

    # No config is read: paths must work when config.toml is the thing that is broken.
    name = profile if profile is not None else GLOBAL.profile
    if name is None:
        name = os.environ.get("RHEO_PROFILE", "").strip() or DEFAULT_PROFILE
    try:
        check_profile(name)
    except InvalidInput as exc:
        raise UsageError(str(exc)) from None
    info = resolve(name).to_json()
    if json_out:
        print_json(info)
        return
    for key, value in info.items():
        echo(f"{key:8} {value}")
