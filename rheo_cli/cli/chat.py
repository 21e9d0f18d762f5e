"""``rheo chat`` (and plain ``rheo``): the interactive REPL."""

from __future__ import annotations

from .errors import command
from .options import AssistantOpt, Model, New, Profile, ProviderOpt
from .state import GLOBAL, runtime_for


@command
def chat(
    new: New = False,
    model: Model = None,
    profile: Profile = None,
    provider: ProviderOpt = None,
    assistant: AssistantOpt = None,
) -> None:
    """Chat in the terminal. Esc+Enter for a new line, Ctrl-C stops a reply, Ctrl-D exits.

    Tab completes slash commands and memory ids; /help lists the commands.

    \b
    Example:
      rheo chat --new        (plain 'rheo' does the same without --new)
    """
    import sys

    from ..errors import UsageError

    if not sys.stdin.isatty():
        raise UsageError("the REPL needs a terminal; pipe questions to 'rheo ask' instead")
    from ..repl.app import run_repl
    from ..ui import signals

    signals.install()

    with runtime_for(profile, model, provider, assistant) as app:
        app.assistant_prompt()  # an unreadable prompt file: one line, before anything is stored
        app.provider()  # none configured: guidance, exit 2, before the REPL stores anything
        app.preload()
        run_repl(app, new_session=new or GLOBAL.new)
