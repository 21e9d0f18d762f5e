"""``rheo providers``: which model providers are configured and whether each is reachable."""

from __future__ import annotations

from ..ui.output import echo, print_json
from .errors import command
from .options import Json, Profile

LEGEND = "ok = ready to use (configured and reachable); -- = not ready: the line says why"
"""The line under the provider list explaining its marks."""


@command
def providers(json_out: Json = False, profile: Profile = None) -> None:
    """List the model providers, the one chat uses, the extraction chain, and whether each is
    reachable (claude on PATH; for the APIs a key set and GET .../models answering, 2 s at
    most, no tokens spent). Keys are never printed.

    \b
    Example:
      rheo providers --json
    """
    from ..app.provider_report import GUIDANCE, report
    from .state import runtime_for

    with runtime_for(profile) as app:
        found = report(app)
    if json_out:
        print_json(found.to_json())
        return
    chat = found.chat
    if chat is not None:
        echo(f"chat:       {chat.name}  ({chat.source})")
    else:
        echo("chat:       none configured (see below)")
    echo(f"extraction: {' -> '.join(c.name for c in found.chain) or 'none'}")
    for link in found.chain:
        if not link.source.startswith("[extraction]"):
            echo(f"            ({link.name}: {link.source})")
    for problem in found.problems:
        echo(f"            ({problem})")
    echo("")
    for status in found.statuses:
        mark = "ok  " if status.ready else "--  "
        echo(f"{mark}{status.kind:12} {status.detail}")
    echo("")
    echo(LEGEND)
    if chat is None:
        import sys

        echo("")
        sys.stdout.write(GUIDANCE)
