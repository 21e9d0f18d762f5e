"""``rheo ask``: one question, one reply on stdout; everything stored."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import ExitStatus
from .errors import command, say_error
from .inputs import compose, read_stdin
from .options import Json, Model, New, Profile
from .state import runtime_for


@command
def ask(
    text: Annotated[
        list[str] | None, typer.Argument(help="The question (else read from stdin).")
    ] = None,
    json_out: Json = False,
    new: New = False,
    model: Model = None,
    profile: Profile = None,
) -> None:
    """Ask one question. Piped stdin is the question, or a document after TEXT.

    stdout carries only the reply: raw text into a pipe, rendered Markdown on a terminal.
    """
    from ..providers import anthropic_api

    anthropic_api.preload()
    from ..assistant import TurnFailed, TurnInterrupted
    from .wiring import kick_background, make_assistant

    message = compose(text, read_stdin())
    rt = runtime_for(profile, model)
    if not anthropic_api.has_credentials():
        from ..errors import ConfigError

        raise ConfigError("ANTHROPIC_API_KEY is not set: export your API key to chat with Claude")
    assistant = make_assistant(rt)
    rendered = sys.stdout.isatty() and not json_out
    from .stream import ReplyWriter

    writer = ReplyWriter(rendered=rendered, spinner=sys.stderr.isatty())

    def notes(ctx: object) -> None:
        for note in getattr(ctx, "notes", []):
            say_error(f"note: {note}")

    try:
        result = assistant.turn(
            message, new_session=new, on_text=None if json_out else writer, on_context=notes
        )
    except TurnInterrupted as exc:
        writer.finish()
        say_error(f"interrupted: the partial reply is kept as turn #{exc.turn.id}")
        raise typer.Exit(int(ExitStatus.INTERRUPTED)) from None
    except TurnFailed as exc:
        writer.finish()
        say_error(str(exc.error))
        raise typer.Exit(int(ExitStatus.ERROR)) from None
    finally:
        writer.finish()
        kick_background(rt)
        rt.close()
    if json_out:
        from .output import print_json

        print_json(result.to_json())
