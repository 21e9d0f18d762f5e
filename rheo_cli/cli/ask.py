"""``rheo ask``: one question, one reply on stdout; everything stored."""

from __future__ import annotations

import sqlite3
import sys
from typing import Annotated

import typer

from ..errors import ExitStatus, UsageError
from ..ui import signals
from .complete import session_numbers
from .errors import command, say_error
from .inputs import compose, read_stdin
from .options import MAX_ID, AssistantOpt, Json, Model, New, Profile, ProviderOpt
from .state import GLOBAL, runtime_for


def say_guidance(text: str) -> None:
    """Print the first-run guidance (several lines) on stderr."""
    try:
        sys.stderr.write(text.rstrip("\n") + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def usage_line(usage: object) -> str:
    """``tokens: 1,204 in (1,000 read from cache, 0 written), 85 out`` for ``-u``, then
    ``; cost $0.0123`` when the provider reported a price (Claude Code does), rounded as the
    turn's meta stores it (6 decimals)."""

    def get(name: str) -> int:
        return int(getattr(usage, name, 0) or 0)

    line = (
        f"tokens: {get('input_tokens'):,} in ({get('cache_read_tokens'):,} read from cache, "
        f"{get('cache_write_tokens'):,} written to it), {get('output_tokens'):,} out"
    )
    cost = getattr(usage, "cost_usd", None)
    if isinstance(cost, int | float):
        line += f"; cost ${round(float(cost), 6):g}"
    return line


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
    cont: Annotated[
        bool,
        typer.Option("--continue", "-c", help="Stay in the last session even after a long pause."),
    ] = False,
    session: Annotated[
        int | None,
        typer.Option(
            "--session",
            min=1,
            max=MAX_ID,
            metavar="N",
            help="Continue session sN (see 'rheo sessions list').",
            autocompletion=session_numbers,
        ),
    ] = None,
    retry: Annotated[
        bool,
        typer.Option("--retry", help="Send the last question again if its reply failed."),
    ] = False,
    system: Annotated[
        str | None,
        typer.Option(
            "--system", "-s", metavar="TEXT", help="Extra instructions, after rheo's own."
        ),
    ] = None,
    usage: Annotated[
        bool,
        typer.Option(
            "--usage", "-u", help="Print tokens, cache reads and (Claude Code) the cost on stderr."
        ),
    ] = False,
    no_stream: Annotated[
        bool, typer.Option("--no-stream", help="Print the reply only once it is complete.")
    ] = False,
    incognito: Annotated[
        bool,
        typer.Option(
            "--incognito",
            help="Store nothing and learn nothing from this exchange (memory is still read).",
        ),
    ] = False,
    assistant_name: AssistantOpt = None,
) -> None:
    """Ask one question. Piped stdin is the question, or a document after TEXT.

    stdout carries only the reply: raw text into a pipe, rendered Markdown on a terminal.
    With --incognito neither the question nor the reply is stored and nothing is extracted.

    \b
    Examples:
      rheo ask "what did I promise Ana?"
      git diff | rheo ask -s "answer in one paragraph" "review this"
      rheo ask -c "and the week after?"      (same session, even after a pause)
      rheo ask --retry                        (the last question failed: send it again)
    """
    rt = runtime_for(profile, model, provider, assistant_name)
    rt.assistant_prompt()  # an unreadable prompt file: one line, exit 1, nothing stored
    rt.preload()  # the SDK's import overlaps reading stdin, opening the store, the context
    signals.install()
    from ..app.tools.chat import make_assistant
    from ..background.worker import kick_background
    from ..memory.ledger import sessions as sessions_mod
    from ..memory.ledger import turns as ledger
    from ..memory.store.errors import StoreError
    from ..turn.results import TurnFailed, TurnInterrupted, outcome_json
    from ..ui.output import print_json
    from ..ui.wording import (
        NOTHING_TO_RETRY,
        cut_line,
        failed_line,
        interrupted_line,
        not_stored_line,
    )

    if sum((cont, session is not None, new or GLOBAL.new, retry)) > 1:
        raise UsageError("use only one of --continue, --session, --new and --retry")
    piped = None if retry and not text else read_stdin()
    if retry and (text or (piped or "").strip()):
        raise UsageError("--retry sends the stored question again: give no new one")
    message = "" if retry else compose(text, piped)
    backend = rt.provider()  # none configured: guidance, exit 2, nothing stored
    backend.on_retry = lambda line: say_error(f"note: {line}")
    question = None
    session_id = None
    if retry:
        question = ledger.unanswered_question(rt.conn, rt.profile)
        if question is None:
            rt.close()
            raise UsageError(NOTHING_TO_RETRY)
    elif session is not None:
        session_id = sessions_mod.session_by_number(rt.conn, rt.profile, session).id
    elif cont:
        try:
            latest = sessions_mod.latest_session(rt.conn, rt.profile)
        except (sqlite3.Error, StoreError):  # the turn answers without it, and says why
            latest = None
        session_id = latest.id if latest is not None else None
    assistant = make_assistant(rt)
    assistant.extra_system = system
    assistant.incognito = incognito
    rendered = sys.stdout is not None and sys.stdout.isatty() and not json_out
    from ..ui.stream import ReplyWriter

    writer = ReplyWriter(rendered=rendered, spinner=sys.stderr is not None and sys.stderr.isatty())

    def notes(ctx: object) -> None:
        for note in getattr(ctx, "notes", []):
            say_error(f"note: {note}")

    try:
        result = assistant.turn(
            message,
            new_session=new or GLOBAL.new,
            on_text=None if json_out or no_stream else writer,
            on_context=notes,
            session_id=session_id,
            question=question,
        )
        if no_stream and not json_out:
            writer(result.reply)
        session_number = None
        if json_out and result.user_turn.session_id:
            # The number `rheo sessions list/show` and --session use (per profile).
            numbers = sessions_mod.session_numbers(rt.conn, rt.profile)
            session_number = numbers.get(result.user_turn.session_id)
    except TurnInterrupted as exc:
        writer.finish()
        if json_out:
            print_json(outcome_json(exc.user_turn, exc.turn, "interrupted"))
        unstored = assistant.not_stored
        say_error(
            f"interrupted; {not_stored_line(unstored)}"
            if unstored is not None
            else interrupted_line(exc.turn.id)
        )
        raise typer.Exit(signals.exit_status(exc.cause)) from None
    except TurnFailed as exc:
        writer.finish()
        if json_out:
            print_json(outcome_json(exc.user_turn, exc.turn, str(exc.error)))
        unstored = assistant.not_stored
        say_error(
            f"{exc.error}; {not_stored_line(unstored)}"
            if unstored is not None and not unstored.reply_only
            else failed_line(exc.error)
        )
        raise typer.Exit(int(ExitStatus.ERROR)) from None
    finally:
        writer.finish()
        if not incognito:
            kick_background(rt)
        rt.close()
    if json_out:
        print_json({**result.to_json(), "session_number": session_number})
    if result.cut:
        say_error(f"note: {cut_line(result)}")
    if assistant.not_stored is not None:  # the reply came; memory could not keep it
        say_error(f"note: {not_stored_line(assistant.not_stored)}")
    if usage:
        say_error(usage_line(result.usage))
    if writer.write_error or sys.stdout is None:
        reason = writer.write_error or "stdout is closed"
        where = (
            f"it is stored as turn #{result.assistant_turn.id}"
            if result.assistant_turn.id
            else "it was not stored" + (" (incognito)" if incognito else "")
        )
        say_error(f"cannot write the reply ({reason}); {where}")
        raise typer.Exit(int(ExitStatus.ERROR))
