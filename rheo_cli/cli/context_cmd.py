"""``rheo context``: exactly what would be sent for a message, with no model call."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..errors import UsageError
from ..ui.output import echo, print_json
from ..ui.output import preview as excerpt
from .errors import command
from .inputs import compose, read_stdin
from .options import AssistantOpt, Json, Profile
from .state import GLOBAL, runtime_for


@command
def context(
    text: Annotated[list[str] | None, typer.Argument(help="The message (else stdin).")] = None,
    json_out: Json = False,
    explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Only the table: every injected line's source and reason (add --system for "
            "the prompt too).",
        ),
    ] = False,
    system: Annotated[
        bool,
        typer.Option("--system", help="With --explain: also print the system prompt and messages."),
    ] = False,
    budget: Annotated[
        int | None, typer.Option("--budget", min=0, help="Token budget (default: config).")
    ] = None,
    profile: Profile = None,
    assistant: AssistantOpt = None,
) -> None:
    """Show what would be sent for TEXT. No model call.

    The system prompt and messages exactly as `rheo ask TEXT` would send them at this clock
    (built by the same code; nothing is stored), with the estimated tokens of each section.
    With --explain, the table of injected lines comes first, and the prompt only with --system.

    \b
    Examples:
      rheo context "what did I promise Ana?"
      rheo context --explain "what did I promise Ana?"
    """
    piped = read_stdin()
    try:
        message = compose(text, piped)  # the message exactly as `rheo ask` would store it
    except UsageError:
        message = ""  # no message: show what is injected around an empty one
    from ..app.context import preview

    with runtime_for(profile, assistant=assistant) as app:
        info = preview(app, message, budget=budget, new_session=GLOBAL.new)
    if json_out:
        print_json(info)
        return
    if explain:
        _table(info, explain=True)
        if not system:
            return
        echo("")
    _prompt(info)
    if not explain:
        _table(info, explain=False)


def _prompt(info: dict[str, Any]) -> None:
    echo("──── system ────")
    for block in info["system"]:
        echo(block["text"] + ("\n[cache breakpoint]" if block["cache"] else ""))
    echo("──── messages ────")
    for msg in info["messages"]:
        echo(f"[{msg['role']}]")
        echo(
            "".join(
                part["text"] + ("[cache breakpoint]\n" if part.get("cache_control") else "")
                for part in msg["content"]
            )
        )
    if info["tools"]:
        echo(f"──── tools: {', '.join(info['tools'])}")


def explain_line(line: dict[str, Any]) -> str:
    """One injected line for ``--explain``: its row, rank, a short excerpt and why it was
    chosen (``matched: tea, ana``, ``recent turn``...)."""
    text = line["text"].lstrip("- ").strip()
    why = f"  ({line['why']})" if line["why"] else ""
    return f"    {line['source']:<12} rank {line['rank']:>8.3f}  {excerpt(text, 60)}{why}"


def _table(info: dict[str, Any], *, explain: bool) -> None:
    echo("──── tokens (estimated) ────")
    for s in info["sections"]:
        dropped = f"  ({s['dropped']} lines left out)" if s["dropped"] else ""
        echo(f"{s['name']:<18} {s['tokens']:>6}{dropped}")
        if explain:
            for ln in s["lines"]:
                echo(explain_line(ln))
    echo(f"{'context total':<18} {info['context_tokens']:>6} of {info['budget']:,} budget")
    echo(f"{'message':<18} {info['message_tokens']:>6}")
