"""``rheo ask``: one question, one reply on stdout; everything stored."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import ExitStatus
from ..ui import signals
from .errors import command, say_error
from .inputs import compose, read_stdin
from .options import Json, Model, New, Profile, ProviderOpt
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
    provider: ProviderOpt = None,
) -> None:
    """Ask one question. Piped stdin is the question, or a document after TEXT.

    stdout carries only the reply: raw text into a pipe, rendered Markdown on a terminal.
    """
    rt = runtime_for(profile, model, provider)
    rt.preload()  # the SDK's import overlaps reading stdin, opening the store, the context
    signals.install()
    from ..background.worker import kick_background
    from ..turn.assistant import TurnFailed, TurnInterrupted, outcome_json
    from ..turn.wiring import make_assistant
    from ..ui.output import print_json

    message = compose(text, read_stdin())
    backend = rt.provider()  # none configured: guidance, exit 2, nothing stored
    assistant = make_assistant(rt)
    rendered = sys.stdout is not None and sys.stdout.isatty() and not json_out
    from ..ui.stream import ReplyWriter

    writer = ReplyWriter(rendered=rendered, spinner=sys.stderr is not None and sys.stderr.isatty())
    backend.on_retry = lambda line: say_error(f"note: {line}")

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
        say_error(f"interrupted: the partial reply is kept as turn #{exc.turn.id}")
        raise typer.Exit(signals.exit_status(exc.cause)) from None
    except TurnFailed as exc:
        writer.finish()
        if json_out:
            print_json(outcome_json(exc.user_turn, exc.turn, str(exc.error)))
        say_error(str(exc.error))
        raise typer.Exit(int(ExitStatus.ERROR)) from None
    finally:
        writer.finish()
        kick_background(rt)
        rt.close()
    if json_out:
        print_json(result.to_json())
    if writer.write_error or sys.stdout is None:
        reason = writer.write_error or "stdout is closed"
        say_error(
            f"cannot write the reply ({reason}); it is stored as turn #{result.assistant_turn.id}"
        )
        raise typer.Exit(int(ExitStatus.ERROR))
