"""Options shared by several commands."""

from __future__ import annotations

from typing import Annotated

import typer

from .complete import profiles

MAX_ID = 2**63 - 1
"""Largest id SQLite can hold: a larger one is a usage error, not a crash."""


def session_number(given: str) -> int:
    """The session number in ``given`` as listings write it (``s6``) or bare (``6``).
    Raises UsageError for anything else (zero, negative, past `MAX_ID`)."""
    from ..errors import UsageError

    text = given.strip().lower().removeprefix("s")
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_ID:
        raise UsageError(f"{given!r} is not a session number (see 'rheo sessions list')")
    return int(text)


Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
New = Annotated[bool, typer.Option("--new", help="Start a new session now.")]
Model = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        metavar="MODEL",
        help="Model to chat with, e.g. openai:gpt-5-mini (else RHEO_MODEL, config).",
    ),
]
ProviderOpt = Annotated[
    str | None,
    typer.Option(
        "--provider",
        metavar="NAME",
        help="anthropic, claude-code, openai or ollama (else RHEO_PROVIDER, config, automatic).",
    ),
]
Profile = Annotated[
    str | None,
    typer.Option(
        "--profile",
        "-p",
        metavar="NAME",
        help="Profile to use (else RHEO_PROFILE, or 'default').",
        autocompletion=profiles,
    ),
]
AssistantOpt = Annotated[
    str | None,
    typer.Option(
        "--assistant",
        "-a",
        metavar="NAME",
        help="Talk to assistant NAME from config.toml [assistants.NAME]: its prompt, its model, "
        "its own memory beside the shared one (else RHEO_ASSISTANT; default none).",
    ),
]
Limit = Annotated[
    int, typer.Option("--limit", "-n", min=1, max=100_000, metavar="N", help="How many.")
]
