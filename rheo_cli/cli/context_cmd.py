"""``rheo context``: exactly what would be sent for a message, with no model call."""

from __future__ import annotations

from typing import Annotated

import typer

from ..ui.output import print_json
from .errors import command
from .inputs import read_stdin
from .options import AssistantOpt, Json, Profile
from .state import runtime_for


@command
def context(
    text: Annotated[list[str] | None, typer.Argument(help="The message (else stdin).")] = None,
    json_out: Json = False,
    explain: Annotated[
        bool, typer.Option("--explain", help="List every injected line's source and reason.")
    ] = False,
    budget: Annotated[
        int | None, typer.Option("--budget", min=0, help="Token budget (default: config).")
    ] = None,
    profile: Profile = None,
    assistant: AssistantOpt = None,
) -> None:
    """Show what would be sent for TEXT. No model call.

    The system prompt and messages exactly as rheo would send them, with the estimated tokens
    of each injected section.
    """
    piped = read_stdin()
    message = " ".join(text or []).strip()
    if piped and piped.strip():
        message = f"{message}\n\n<stdin>\n{piped.strip()}\n</stdin>" if message else piped.strip()
    rt = runtime_for(profile, assistant=assistant)
    from ..turn.assistant import preview
    from ..turn.wiring import tool_specs

    info = preview(rt, message, budget=budget, tools=tool_specs(rt.assistant_name))
    if json_out:
        print_json(info)
        return
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
    print("──── tokens (estimated) ────")
    for s in info["sections"]:
        dropped = f"  ({s['dropped']} lines left out)" if s["dropped"] else ""
        print(f"{s['name']:<18} {s['tokens']:>6}{dropped}")
        if explain:
            for ln in s["lines"]:
                print(f"    {ln['source']:<12} rank {ln['rank']:>8.3f}  {ln['why']}")
    print(f"{'context total':<18} {info['context_tokens']:>6} of {info['budget']:,} budget")
    print(f"{'message':<18} {info['message_tokens']:>6}")
