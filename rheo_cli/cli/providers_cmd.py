"""``rheo providers``: which model providers are configured and whether each is reachable."""

from __future__ import annotations

from ..ui.output import echo, print_json
from .errors import command
from .options import Json, Profile


@command
def providers(json_out: Json = False, profile: Profile = None) -> None:
    """List the model providers, the one chat uses, the extraction chain, and whether each is
    reachable (claude on PATH; for the APIs a key set and GET .../models answering, 2 s at
    most, no tokens spent). Keys are never printed.

    \b
    Example:
      rheo providers --json
    """
    from ..providers import factory, reach
    from .state import runtime_for

    rt = runtime_for(profile)
    settings = rt.config.providers
    statuses = reach.check_all(settings)
    chain, problems = factory.extraction_chain(settings, rt.choice)
    chat = rt.choice
    if json_out:
        print_json(
            {
                "chat": {"provider": chat.kind, "model": chat.model, "source": chat.source}
                if chat
                else None,
                "extraction": [c.name for c in chain],
                "extraction_sources": [c.source for c in chain],
                "extraction_problems": problems,
                "providers": [s.to_json() for s in statuses],
            }
        )
        return
    if chat is not None:
        echo(f"chat:       {chat.name}  ({chat.source})")
    else:
        echo("chat:       none configured (see below)")
    echo(f"extraction: {' -> '.join(c.name for c in chain) or 'none'}")
    for link in chain:
        if not link.source.startswith("[extraction]"):
            echo(f"            ({link.name}: {link.source})")
    for problem in problems:
        echo(f"            ({problem})")
    echo("")
    for status in statuses:
        mark = "ok  " if status.ready else "--  "
        echo(f"{mark}{status.kind:12} {status.detail}")
    if chat is None:
        import sys

        echo("")
        sys.stdout.write(factory.GUIDANCE)
