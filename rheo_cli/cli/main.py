"""The ``rheo`` entry point: the typer app and its commands.

Command modules import only typer and rheo's light modules at the top; the store, rich
rendering, prompt-toolkit and the model SDK are imported inside the commands that need them,
so ``rheo --help`` and the read-only commands start fast.
"""

from __future__ import annotations

import sys

import typer

from ..errors import ExitStatus
from ..ui.output import quiet_stdout
from . import ask as ask_cmd
from . import chat as chat_cmd
from . import context_cmd, digests_cmd, doctor_cmd, history, memory_cmd, paths_cmd, sessions_cmd
from .errors import say_error
from .options import Model, New, Profile
from .state import GLOBAL

app = typer.Typer(
    name="rheo",
    rich_markup_mode=None,
    help="A command-line assistant that remembers. Run with no command to chat.",
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context, profile: Profile = None, model: Model = None, new: New = False
) -> None:
    """rheo: chat with Claude; everything is kept in a local SQLite file and remembered."""
    GLOBAL.profile = profile
    GLOBAL.model = model
    GLOBAL.new = new
    if ctx.invoked_subcommand is None:
        if sys.stdin is not None and not sys.stdin.isatty():
            # `echo "question" | rheo` asks, as `rheo ask` would.
            ask_cmd.ask(text=None, json_out=False, new=new, model=model, profile=profile)
            return
        chat_cmd.chat(new=new, model=model, profile=profile)


app.command()(ask_cmd.ask)
app.command()(chat_cmd.chat)
app.command()(context_cmd.context)
app.command()(paths_cmd.paths)
app.add_typer(history.app, name="history")
app.add_typer(sessions_cmd.app, name="sessions")
app.add_typer(memory_cmd.app, name="memory")
app.add_typer(memory_cmd.items_app, name="items")
app.add_typer(digests_cmd.app, name="digests")
app.add_typer(digests_cmd.jobs_app, name="jobs")
app.command()(digests_cmd.maintain)
app.command()(doctor_cmd.doctor)


def run(argv: list[str] | None = None) -> int:
    """Run the command line and return the exit status; usage errors are one line."""
    try:
        result = app(args=argv, prog_name="rheo", standalone_mode=False)
    except KeyboardInterrupt:
        say_error("interrupted")
        return int(ExitStatus.INTERRUPTED)
    except BrokenPipeError:
        quiet_stdout()
        return int(ExitStatus.OK)
    except Exception as exc:
        if type(exc).__name__ == "Abort":  # click's Ctrl-C while parsing
            say_error("interrupted")
            return int(ExitStatus.INTERRUPTED)
        exit_code = getattr(exc, "exit_code", None)
        format_message = getattr(exc, "format_message", None)
        if isinstance(exit_code, int) and callable(format_message):
            if type(exc).__name__ == "NoArgsIsHelpError":  # `rheo memory`: show its help
                sys.stderr.write(str(format_message()).rstrip() + "\n")
                return exit_code
            ctx = getattr(exc, "ctx", None)
            where = getattr(ctx, "command_path", "rheo") if ctx is not None else "rheo"
            say_error(f"{format_message()} (see '{where} --help')")
            return exit_code
        raise
    return result if isinstance(result, int) else int(ExitStatus.OK)


def main() -> None:
    """Console-script entry point (``rheo``)."""
    code = run()
    try:
        sys.stdout.flush()
    except (BrokenPipeError, OSError, ValueError, AttributeError):
        quiet_stdout()
    sys.exit(code)


if __name__ == "__main__":
    main()
