"""``rheo context``: exactly what would be sent for a message, with no model call."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..ui.output import print_json
from .errors import command
from .inputs import read_stdin
from .options import Json, Profile
from .state import runtime_for


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
) -> None:
    """Show what would be sent for TEXT. No model call.

    The system prompt and messages exactly as rheo would send them, with the estimated tokens
    of each injected section. With --explain, the table of injected lines comes first, and the
    prompt only with --system.

    \b
    Examples:
      rheo context "what did I promise Ana?"
      rheo context --explain "what did I promise Ana?"
    """
    piped = read_stdin()
    message = " ".join(text or []).strip()
    if piped and piped.strip():
        message = f"{message}\n\n<stdin>\n{piped.strip()}\n</stdin>" if message else piped.strip()
    rt = runtime_for(profile)
    from ..turn.assistant import preview
    from ..turn.wiring import tool_specs

    info = preview(rt, message, budget=budget, tools=tool_specs())
    if json_out:
        print_json(info)
        return
    if explain:
        _table(info, explain=True)
        if not system:
            return
        print()
    _prompt(info)
    if not explain:
        _table(info, explain=False)


def _prompt(info: dict[str, Any]) -> None:
    print("──── system ────")
    for block in info["system"]:
        print(block["text"] + ("\n[cache breakpoint]" if block["cache"] else ""))
    print("──── messages ────")
    for msg in info["messages"]:
        print(f"[{msg['role']}]")
        for part in msg["content"]:
            print(part["text"], end="")
            if part.get("cache_control"):
                print("[cache breakpoint]")
        print()
    if info["tools"]:
        print(f"──── tools: {', '.join(info['tools'])}")


def _table(info: dict[str, Any], *, explain: bool) -> None:
    print("──── tokens (estimated) ────")
    for s in info["sections"]:
        dropped = f"  ({s['dropped']} lines left out)" if s["dropped"] else ""
        print(f"{s['name']:<18} {s['tokens']:>6}{dropped}")
        if explain:
            for ln in s["lines"]:
                print(f"    {ln['source']:<12} rank {ln['rank']:>8.3f}  {ln['why']}")
    print(f"{'context total':<18} {info['context_tokens']:>6} of {info['budget']:,} budget")
    print(f"{'message':<18} {info['message_tokens']:>6}")
