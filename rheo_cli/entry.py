"""The ``rheo`` console script: start importing the model SDK at once when a model call is
coming (``rheo``, ``rheo ask``, ``rheo chat``), so that its ~1 s import overlaps loading the
command line, opening the store and assembling the context; then run the command line."""

from __future__ import annotations

import sys

from .resident.protocol import command_of


def resident_status(argv: list[str], command: str | None) -> int | None:
    """The exit status of ``argv`` run by the resident rheo (`rheo_cli.resident.client`),
    or of ``rheo resident ...``; None when the command runs in this process."""
    if command == "resident":
        from .resident import control

        return control.main(argv[argv.index("resident") + 1 :])
    piped = command == "" and sys.stdin is not None and not sys.stdin.isatty()
    if command not in ("ask", "mcp") and not piped:
        return None
    from . import ready
    from .resident import client

    try:
        return client.run(argv, ready.when_reached, asking=command != "mcp")
    except KeyboardInterrupt:  # before the request left: nothing was sent or stored
        sys.stderr.write("rheo: interrupted\n")
        return 130


def main() -> None:
    """Entry point of the ``rheo`` script."""
    import os

    completing = bool(os.environ.get("_RHEO_COMPLETE"))  # the shell asks for Tab completions
    quick = {"--version", "-V", "--install-completion", "--show-completion"}
    if not completing and not quick & set(sys.argv[1:]):
        code = resident_status(sys.argv[1:], command_of(sys.argv[1:]))
        if code is not None:
            sys.exit(code)
    if (
        not completing
        and not quick & set(sys.argv[1:])
        and command_of(sys.argv[1:])
        in (
            "",
            "ask",
            "chat",
        )
    ):
        from .providers.anthropic_api import preload

        preload()
    from . import ready
    from .cli.main import main as cli_main

    try:
        cli_main()
    except SystemExit as exc:
        if exc.code in (0, None):
            ready.reached()  # e.g. the resident for the next command (resident.client)
        raise
