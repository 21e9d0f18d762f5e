"""The ``rheo`` entry point: the typer app and its commands.

Command modules import only typer and rheo's light modules at the top; the store, rich
rendering, prompt-toolkit and the model SDK are imported inside the commands that need them,
so ``rheo --help`` and the read-only commands start fast.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from ..errors import ExitStatus
from ..ui.output import quiet_stdout
from . import ask as ask_cmd
from . import chat as chat_cmd
from . import (
    config_cmd,
    context_cmd,
    digests_cmd,
    doctor_cmd,
    history,
    import_cmd,
    kb_cmd,
    mcp_cmd,
    memory_cmd,
    paths_cmd,
    providers_cmd,
    purge_cmd,
    sessions_cmd,
    team_cmd,
    telegram_cmd,
    transfer_cmd,
    usage_cmd,
)
from .errors import say_error
from .group import GroupedHelp
from .options import AssistantOpt, Model, New, Profile, ProviderOpt
from .state import GLOBAL

app = typer.Typer(
    pretty_exceptions_show_locals=False,
    name="rheo",
    cls=GroupedHelp,
    rich_markup_mode=None,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version("rheo-cli")
        except PackageNotFoundError:
            number = "unknown"
        print(f"rheo {number}")
        raise typer.Exit()


Version = Annotated[
    bool,
    typer.Option(
        "--version", "-V", callback=_version, is_eager=True, help="Print rheo's version and exit."
    ),
]


@app.callback(invoke_without_command=True)
def root(
    ctx: typer.Context,
    profile: Profile = None,
    model: Model = None,
    provider: ProviderOpt = None,
    assistant: AssistantOpt = None,
    new: New = False,
    version: Version = False,
) -> None:
    """A command-line assistant that remembers. Run with no command to chat.

    \b
    Examples:
      rheo                          chat in the terminal (the REPL)
      rheo ask "what did I promise Ana?"
      rheo memory list              what rheo remembers
      rheo --install-completion     Tab completion for your shell
      rheo resident status|stop     the resident rheo that keeps ask and mcp warm
    """
    GLOBAL.profile = profile
    GLOBAL.model = model
    GLOBAL.provider = provider
    GLOBAL.assistant = assistant
    GLOBAL.new = new
    if ctx.invoked_subcommand is None:
        if sys.stdin is not None and not sys.stdin.isatty():
            # `echo "question" | rheo` asks, as `rheo ask` would.
            ask_cmd.ask(
                text=None,
                json_out=False,
                new=new,
                model=model,
                profile=profile,
                provider=provider,
                assistant_name=assistant,
            )
            return
        chat_cmd.chat(new=new, model=model, profile=profile, provider=provider, assistant=assistant)


CHAT, MEMORY, HISTORY, MAINTENANCE = "Chat", "Memory", "History", "Maintenance"
app.command(rich_help_panel=CHAT)(ask_cmd.ask)
app.command(rich_help_panel=CHAT)(chat_cmd.chat)
app.command(rich_help_panel=CHAT)(context_cmd.context)
app.add_typer(memory_cmd.app, name="memory", rich_help_panel=MEMORY)
app.add_typer(memory_cmd.items_app, name="items", rich_help_panel=MEMORY)
app.add_typer(history.app, name="history", rich_help_panel=HISTORY)
app.add_typer(sessions_cmd.app, name="sessions", rich_help_panel=HISTORY)
app.add_typer(digests_cmd.app, name="digests", rich_help_panel=HISTORY)
app.command(rich_help_panel=MAINTENANCE)(digests_cmd.maintain)
app.command(rich_help_panel=MAINTENANCE)(doctor_cmd.doctor)
app.add_typer(digests_cmd.jobs_app, name="jobs", rich_help_panel=MAINTENANCE)
app.add_typer(config_cmd.app, name="config", rich_help_panel=MAINTENANCE)
app.command(rich_help_panel=MAINTENANCE)(paths_cmd.paths)
app.command(rich_help_panel=MAINTENANCE)(providers_cmd.providers)
app.command(rich_help_panel=HISTORY)(usage_cmd.usage)
app.add_typer(kb_cmd.app, name="kb", rich_help_panel=MEMORY)
app.command(rich_help_panel=CHAT)(mcp_cmd.mcp)
app.command(rich_help_panel=CHAT)(telegram_cmd.telegram)
app.command(rich_help_panel=MAINTENANCE)(purge_cmd.purge)
app.add_typer(team_cmd.app, name="team", rich_help_panel=MAINTENANCE)
app.command(rich_help_panel=MAINTENANCE)(transfer_cmd.backup)
app.command(rich_help_panel=MAINTENANCE)(transfer_cmd.export)
app.command("import", rich_help_panel=MAINTENANCE)(import_cmd.import_)
# An alias of `rheo import` kept for scripts; its --help says so.
app.command("import-history", hidden=True)(import_cmd.import_history)


_COMMAND: Any = None
"""The click command tree, built once by `prepare` (the resident, before it forks)."""


def prepare() -> None:
    """Build the command tree now rather than at each `run` (typer builds it per call), and
    import what running a command imports late (a process that forks commands: the resident)."""
    global _COMMAND
    import typer._click.decorators  # noqa: F401 - imported by click at the first invocation
    import typer.main

    from . import completion_setup  # noqa: F401 - the group's help and completion options

    _COMMAND = typer.main.get_command(app)


def run(argv: list[str] | None = None) -> int:
    """Run the command line and return the exit status; usage errors are one line."""
    import os

    from ..errors import UsageError
    from .inputs import check_environment, clean_args

    # Arguments that are not valid UTF-8 have those bytes replaced (U+FFFD), as stdin has, so
    # no command ever meets the surrogates Python would otherwise hand it (and fail to encode
    # them later); a file argument is still opened by its own bytes (`inputs.file_arg`).
    args = clean_args(list(sys.argv[1:] if argv is None else argv))
    try:
        if not {"-h", "--help", "--version", "-V"} & set(args):  # help needs no environment
            check_environment(os.environ)
    except UsageError as exc:
        say_error(str(exc))
        return int(ExitStatus.USAGE)
    try:
        command = app if _COMMAND is None else _COMMAND
        result = command(args=args, prog_name="rheo", standalone_mode=False)
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
            from .usage_words import usage_line

            say_error(f"{usage_line(exc)} (see '{where} --help')")
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
