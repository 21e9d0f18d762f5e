"""``rheo ask``: one question, one reply on stdout; everything stored."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import ExitStatus
from ..ui import signals
from .errors import command, say_error
from .inputs import compose, read_stdin
from .options import Json, Model, New, Profile
from .state import GLOBAL, runtime_for


@command
def ask(
    text: Annotated[
        list[str] | None, typer.Argument(help="The question (else read from stdin).")
    ] = None,
    json_out: Json = False,
    new: New = False,
    model: Model = None,
    profile: Profile = None,
    incognito: Annotated[
        bool,
        typer.Option(
            "--incognito",
            help="Store nothing and learn nothing from this exchange (memory is still read).",
        ),
    ] = False,
) -> None:
    """Ask one question. Piped stdin is the question, or a document after TEXT.

    stdout carries only the reply: raw text into a pipe, rendered Markdown on a terminal.
    With --incognito neither the question nor the reply is stored and nothing is extracted.
    """
    from ..providers import anthropic_api

    anthropic_api.preload()
    signals.install()
    from ..background.worker import kick_background
    from ..turn.assistant import TurnFailed, TurnInterrupted, outcome_json
    from ..turn.wiring import make_assistant
    from ..ui.output import print_json

    message = compose(text, read_stdin())
    rt = runtime_for(profile, model)
    assistant = make_assistant(rt)
    assistant.incognito = incognito
    rendered = sys.stdout is not None and sys.stdout.isatty() and not json_out
    from ..ui.stream import ReplyWriter

    writer = ReplyWriter(rendered=rendered, spinner=sys.stderr is not None and sys.stderr.isatty())
    provider = rt.provider()
    if hasattr(provider, "on_retry"):
        provider.on_retry = lambda line: say_error(f"note: {line}")

    def notes(ctx: object) -> None:
        for note in getattr(ctx, "notes", []):
            say_error(f"note: {note}")

    try:
        result = assistant.turn(
            message,
            new_session=new or GLOBAL.new,
            on_text=None if json_out else writer,
            on_context=notes,
        )
    except TurnInterrupted as exc:
        writer.finish()
        if json_out:
            print_json(outcome_json(exc.user_turn, exc.turn, "interrupted"))
        kept = f"kept as turn #{exc.turn.id}" if exc.turn.id else "not stored (incognito)"
        say_error(f"interrupted: the partial reply is {kept}")
        raise typer.Exit(signals.exit_status(exc.cause)) from None
    except TurnFailed as exc:
        writer.finish()
        if json_out:
            print_json(outcome_json(exc.user_turn, exc.turn, str(exc.error)))
        say_error(str(exc.error))
        raise typer.Exit(int(ExitStatus.ERROR)) from None
    finally:
        writer.finish()
        if not incognito:
            kick_background(rt)
        rt.close()
    if json_out:
        print_json(result.to_json())
    if writer.write_error or sys.stdout is None:
        reason = writer.write_error or "stdout is closed"
        where = (
            f"it is stored as turn #{result.assistant_turn.id}"
            if result.assistant_turn.id
            else "it was not stored (incognito)"
        )
        say_error(f"cannot write the reply ({reason}); {where}")
        raise typer.Exit(int(ExitStatus.ERROR))
