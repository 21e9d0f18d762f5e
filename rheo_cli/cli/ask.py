"""``rheo ask``: one question, one reply on stdout; everything stored."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import ExitStatus, UsageError
from ..ui import signals
from .complete import session_numbers
from .errors import command, say_error
from .inputs import compose, read_stdin
from .options import AssistantOpt, Json, Model, New, Profile, ProviderOpt, session_number
from .state import GLOBAL, runtime_for

if TYPE_CHECKING:
    from ..app.conversation import Outcome
    from ..ui.stream import ReplyWriter


def say_guidance(text: str) -> None:
    """Print the first-run guidance (several lines) on stderr."""
    try:
        sys.stderr.write(text.rstrip("\n") + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def _message(text: list[str] | None, piped: str | None, files: list[Path]) -> str:
    """The question with piped text and the ``-f`` files after it (`attachments.attach`)."""
    if not files:
        return compose(text, piped)
    from .attachments import attach

    has_text = bool(text) or bool((piped or "").strip())
    return attach(compose(text, piped) if has_text else "", files)


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
    json_stream: Annotated[
        bool,
        typer.Option(
            "--json-stream",
            help="Print NDJSON events while the reply streams: delta, notice, tool, usage, "
            "final (the --json object).",
        ),
    ] = False,
    new: New = False,
    model: Model = None,
    profile: Profile = None,
    provider: ProviderOpt = None,
    cont: Annotated[
        bool,
        typer.Option("--continue", "-c", help="Stay in the last session even after a long pause."),
    ] = False,
    session: Annotated[
        str | None,
        typer.Option(
            "--session",
            metavar="N",
            help="Continue session N, as 'rheo sessions list' names it (s6 or 6).",
            autocompletion=session_numbers,
        ),
    ] = None,
    retry: Annotated[
        bool,
        typer.Option("--retry", help="Send the last question again if its reply failed."),
    ] = False,
    fork: Annotated[
        str | None,
        typer.Option(
            "--fork",
            metavar="N",
            help="Start a new session that begins with session N's turns (s6 or 6).",
            autocompletion=session_numbers,
        ),
    ] = None,
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
    files: Annotated[
        list[Path] | None,
        typer.Option(
            "--file",
            "-f",
            metavar="PATH",
            help="Attach a text file after the question, with its name (repeat for several).",
        ),
    ] = None,
    assistant_name: AssistantOpt = None,
    schema: Annotated[
        str | None,
        typer.Option(
            "--schema",
            metavar="FILE|JSON",
            help="Ask for JSON matching this JSON Schema (a file or inline JSON); the reply "
            "is checked against it and printed as JSON.",
        ),
    ] = None,
) -> None:
    """Ask one question. Piped stdin is the question, or a document after TEXT.

    stdout carries only the reply: raw text into a pipe, rendered Markdown on a terminal.
    With --incognito neither the question nor the reply is stored and nothing is extracted.

    \b
    Examples:
      rheo ask "what did I promise Ana?"
      git diff | rheo ask -s "answer in one paragraph" "review this"
      rheo ask -c "and the week after?"      (same session, even after a pause)
      rheo ask --fork s6 "what if we went in June instead?"
      rheo ask --retry                        (the last question failed: send it again)
      rheo ask -f notes.md -f todo.txt "what is left to do?"
      rheo ask --schema '{"type":"array","items":{"type":"string"}}' "my open items"
    """
    from ..app.conversation import Conversation, Notice, SendOptions, TextDelta, ToolActivity
    from ..app.events import ending_json, event_json, memory_note, ndjson_line
    from ..ui.stream import ReplyWriter

    number = session_number(session) if session is not None else None
    origin = session_number(fork) if fork is not None else None
    if sum((cont, session is not None, new or GLOBAL.new, retry, fork is not None)) > 1:
        raise UsageError("use only one of --continue, --session, --new, --fork and --retry")
    if json_out and json_stream:
        raise UsageError("use only one of --json and --json-stream")
    wanted = _schema(schema, json_out or json_stream)
    with runtime_for(profile, model, provider, assistant_name) as app:
        app.assistant_prompt()  # an unreadable prompt file: one line, exit 1, nothing stored
        app.preload()  # the SDK's import overlaps reading stdin, opening the store, the context
        signals.install()
        piped = None if retry and not text else read_stdin()
        if retry and (text or (piped or "").strip()):
            raise UsageError("--retry sends the stored question again: give no new one")
        if retry and files:
            raise UsageError("--retry sends the stored question again: attach no file")
        message = "" if retry else _message(text, piped, files or [])
        rendered = sys.stdout is not None and sys.stdout.isatty() and not json_out
        rendered = rendered and not json_stream
        writer = ReplyWriter(
            rendered=rendered,
            spinner=sys.stderr is not None and sys.stderr.isatty() and not json_stream,
        )
        streaming = not (json_out or no_stream or json_stream or wanted is not None)

        def on_event(event: object) -> None:
            if json_stream and isinstance(event, TextDelta | Notice | ToolActivity):
                writer(ndjson_line(event_json(event)))
                return
            if isinstance(event, ToolActivity):
                note = memory_note(event)
                if note:
                    say_error(f"note: {note}")
            elif isinstance(event, TextDelta):
                if streaming:
                    writer(event.text)
            elif isinstance(event, Notice):
                say_error(f"note: {event.text}")

        options = SendOptions(
            new_session=new or GLOBAL.new,
            session=number,
            continue_last=cont,
            retry=retry,
            fork=origin,
            system=_instructions(system, wanted),
            incognito=incognito,
        )
        try:
            outcome = Conversation(app).send(message, options, on_event)
            if json_stream:
                for value in ending_json(outcome):
                    writer(ndjson_line(value))
            elif outcome.status in ("ok", "cut") and not (streaming or json_out or wanted):
                writer(outcome.reply)
        finally:
            writer.finish()
    render_outcome(outcome, writer, json_out=json_out, usage=usage)
    if wanted is not None:
        print_structured(outcome, wanted)


def _schema(given: str | None, json_output: bool) -> dict[str, object] | None:
    """``--schema``'s JSON Schema (None without it). Raises UsageError for a schema that
    cannot be read or is not valid, or with --json / --json-stream."""
    if given is None:
        return None
    if json_output:
        raise UsageError("--schema prints the reply's JSON: use it without --json/--json-stream")
    from ..app.structured import load_schema

    return load_schema(given)


def _instructions(system: str | None, schema: dict[str, object] | None) -> str | None:
    """``--system`` followed by what ``--schema`` asks of the model."""
    if schema is None:
        return system
    from ..app.structured import instructions

    return "\n\n".join(part for part in (system, instructions(schema)) if part)


def print_structured(outcome: Outcome, schema: dict[str, object]) -> None:
    """Print the reply's JSON (indented) once it matches ``schema``. Raises the app's
    ReplyMismatch (exit 1, one line saying where the stored reply is) when the reply is
    not JSON or does not match."""
    from ..app.structured import ReplyMismatch, check, reply_json
    from ..ui.output import print_json

    try:
        value = reply_json(outcome.reply)
        check(value, schema)
    except ReplyMismatch as exc:
        where = (
            f"the reply is stored as turn #{outcome.reply_turn_id}"
            if outcome.reply_turn_id
            else "the reply was not stored"
        )
        raise ReplyMismatch(f"{exc}; {where}") from None
    print_json(value)


def render_outcome(outcome: Outcome, writer: ReplyWriter, *, json_out: bool, usage: bool) -> None:
    """Print what a turn ended in as ``rheo ask`` does (the reply itself went through
    ``writer``): the ``--json`` object, one stderr line per note, ``-u``'s token line.
    Raises typer.Exit with the exit status of an interrupted (130, 143/129 on SIGTERM or
    SIGHUP) or failed (1) turn, or of a reply that could not be written."""
    from ..ui.output import print_json
    from ..ui.wording import cut_line, failed_line, interrupted_line, not_stored_line

    unstored = outcome.not_stored
    if outcome.status == "interrupted":
        if json_out:
            print_json(outcome.to_json())
        say_error(
            f"interrupted; {not_stored_line(unstored)}"
            if unstored is not None
            else interrupted_line(outcome.reply_turn_id)
        )
        raise typer.Exit(signals.exit_status(outcome.cause))
    if outcome.status == "failed":
        if json_out:
            print_json(outcome.to_json())
        say_error(
            f"{outcome.error}; {not_stored_line(unstored)}"
            if unstored is not None and not unstored.reply_only
            else failed_line(outcome.error)
        )
        raise typer.Exit(int(ExitStatus.ERROR))
    if json_out:
        print_json(outcome.to_json())
    if outcome.cut:
        say_error(f"note: {cut_line(outcome)}")
    if unstored is not None:  # the reply came; memory could not keep it
        say_error(f"note: {not_stored_line(unstored)}")
    if usage:
        say_error(usage_line(outcome.usage))
    if writer.write_error or sys.stdout is None:
        reason = writer.write_error or "stdout is closed"
        where = (
            f"it is stored as turn #{outcome.reply_turn_id}"
            if outcome.reply_turn_id
            else "it was not stored" + (" (incognito)" if outcome.incognito else "")
        )
        say_error(f"cannot write the reply ({reason}); {where}")
        raise typer.Exit(int(ExitStatus.ERROR))
