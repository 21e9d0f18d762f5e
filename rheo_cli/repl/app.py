"""The REPL loop: read a line, run a slash command or a turn, show the streamed reply.

Input: persistent history (per profile), Esc+Enter for a new line, bracketed paste (multi-line
pastes arrive whole), Ctrl-C clears the line or stops a reply in progress (the partial reply is
kept, marked interrupted), Ctrl-D on an empty line exits.
"""

from __future__ import annotations

import sys
from typing import Any, TextIO

from ..app.app import App
from ..ui.signals import Terminated
from . import commands

PROMPT = "› "
INCOGNITO_PROMPT = "incognito › "
"""The prompt while /incognito is on: nothing typed is stored or learnt from."""
CONTINUATION = "… "
"""Shown before each further line of a multi-line message (Esc+Enter, a paste)."""


def prompt_for(incognito: bool) -> str:
    """The prompt to show: `INCOGNITO_PROMPT` while incognito, else `PROMPT`."""
    return INCOGNITO_PROMPT if incognito else PROMPT


def continuation(width: int, line_number: int, is_soft_wrap: int) -> str:
    """The prompt of a message's second and later lines, as wide as `PROMPT`."""
    return CONTINUATION.rjust(width)


def _key_bindings() -> Any:
    from prompt_toolkit.key_binding import KeyBindings

    kb = KeyBindings()

    @kb.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    return kb


def make_session(rt: App, *, input: Any = None, output: Any = None, completer: Any = None) -> Any:
    """A prompt-toolkit PromptSession with rheo's history file, key bindings, continuation
    prompt and (when given) Tab completion."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory, InMemoryHistory

    from ..app.profiles import history_file

    history: Any
    try:
        history = FileHistory(str(history_file(rt)))
    except OSError:
        history = InMemoryHistory()
    return PromptSession(
        history=history,
        key_bindings=_key_bindings(),
        multiline=False,
        input=input,
        output=output,
        enable_history_search=True,
        prompt_continuation=continuation,
        completer=completer,
        complete_while_typing=False,
    )


def run_repl(
    rt: App,
    *,
    new_session: bool = False,
    input: Any = None,
    output: Any = None,
    out: TextIO | None = None,
    rendered: bool | None = None,
) -> None:
    """Run the REPL until ``/exit`` or Ctrl-D. ``input``/``output`` are prompt-toolkit's (tests
    pass a pipe input and a dummy output); replies and notices go to ``out`` (stdout)."""
    from ..app.conversation import Conversation

    stream = out or sys.stdout
    show_rendered = stream.isatty() if rendered is None else rendered
    from .completion import SlashCompleter

    state = commands.ReplState(
        rt=rt,
        conversation=Conversation(rt),
        out=stream,
        rendered=show_rendered,
        force_new=new_session,
    )
    completer = SlashCompleter(commands.MEANINGS, commands.completion_ids(state), commands.TAKES_ID)
    session = make_session(rt, input=input, output=output, completer=completer)
    who = f" · assistant {rt.assistant_name}" if rt.assistant_name else ""
    state.say(f"rheo · profile {rt.profile}{who} · {rt.model} · /help for commands, Ctrl-D to exit")
    from ..app.jobs import start_background, start_resident

    start_resident(rt)  # by the first reply it runs: the memory work after each goes to it
    start_background(rt)  # a session closed by time while nobody was here: summarise it
    from prompt_toolkit.history import InMemoryHistory

    kept_history = session.default_buffer.history
    private_history = InMemoryHistory()
    while not state.done:
        # While incognito, lines typed go to a history in memory only, not the history file.
        session.default_buffer.history = private_history if state.incognito else kept_history
        try:
            text = session.prompt(prompt_for(state.incognito))
        except KeyboardInterrupt as stop:
            if isinstance(stop, Terminated):
                raise
            continue
        except EOFError:
            break
        if not text.strip():
            continue
        if text.lstrip().startswith("/"):
            commands.run_slash(state, text.strip())
        else:
            commands.run_turn(state, text)
