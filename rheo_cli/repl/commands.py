"""What the REPL does with a line: a turn with the model, or a slash command."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from ..app.app import App
from ..app.conversation import Conversation
from ..app.errors import DatabaseError, EngineError, StoreError, database_message
from ..errors import RheoError

HELP = """\
/help             this list
/new              start a new session with the next message
/retry            send the last question again if its reply failed
/context [TEXT]   show the context rheo would inject for TEXT
/history QUERY    search earlier turns
/memory [QUERY]   list (or search) what rheo remembers
/items            open items (commitments)
/done ID          mark an open item done
/pin ID, /unpin ID, /forget ID   keep forever, let decay, retract a memory
/conflicts        contradicting facts; /resolve ID keeps one
/digests          summaries of recent sessions
/sessions [N]     the last N sessions (10), as 'rheo sessions list' shows them
/model [NAME]     the chat model; NAME switches to it for the rest of this REPL
/file PATH        attach a text file to the next message (again: one more)
/edit             write the next message in $VISUAL or $EDITOR; sent when it exits
/copy             put the last reply on the clipboard
/incognito        stop (or resume) storing: nothing typed is kept or learnt meanwhile
/exit             leave (Ctrl-D too)
Esc+Enter adds a line; Tab completes commands and ids; Ctrl-C stops a reply (the part
received is kept)."""

MEANINGS = {
    "/help": "list the commands",
    "/new": "start a new session",
    "/retry": "send the last question again",
    "/incognito": "stop (or resume) storing anything",
    "/context": "the context rheo would inject",
    "/history": "search earlier turns",
    "/memory": "what rheo remembers",
    "/items": "open items",
    "/done": "mark an open item done",
    "/pin": "keep a memory forever",
    "/unpin": "let a memory decay again",
    "/forget": "retract a memory",
    "/conflicts": "contradicting facts",
    "/resolve": "keep one of a conflict",
    "/digests": "summaries of recent sessions",
    "/sessions": "recent sessions",
    "/model": "show or switch the chat model",
    "/file": "attach a text file to the next message",
    "/edit": "write the next message in your editor",
    "/copy": "the last reply to the clipboard",
    "/exit": "leave (Ctrl-D too)",
}
"""Each slash command's short meaning, for Tab completion."""

SEARCH_LIMIT = 50
"""The most memories ``/memory WORDS`` shows."""

SESSIONS_LIMIT = 10
"""How many sessions ``/sessions`` lists without a number."""


@dataclass
class ReplState:
    """The REPL's state between lines."""

    rt: App
    conversation: Conversation
    out: TextIO
    rendered: bool
    force_new: bool = False
    done: bool = False
    incognito: bool = False
    """Nothing is stored: no turns, no extraction, no line in the input history file."""
    attachments: list[str] = field(default_factory=list)
    """Files given with ``/file`` for the next message, each as `app.attachments.attached`
    made it (read when given)."""
    last_reply: str = ""
    """The text of the last reply that came (partial when interrupted), for ``/copy``."""

    def say(self, text: str) -> None:
        """Print a notice line, through the one display filter (`safe`): stored text in it
        is shown literally, never acted on by the terminal."""
        from ..ui.output import safe

        self.out.write(safe(text) + "\n")
        self.out.flush()


def _notes(state: ReplState, notes: list[str]) -> None:
    for note in notes:
        state.say(f"rheo: note: {note}")


def run_turn(state: ReplState, text: str, *, retry: bool = False) -> None:
    """Send ``text`` to the model and show the streamed reply; errors become one line.

    With no provider configured nothing is stored and the setup guidance is shown instead.
    ``retry``: send the last unanswered question again instead (/retry)."""
    from ..app.conversation import Notice, SendOptions, TextDelta
    from ..ui.signals import Terminated
    from ..ui.stream import ReplyWriter
    from ..ui.wording import cut_line, failed_line, interrupted_line, not_stored_line

    guidance = state.rt.provider_ready()
    if guidance is not None:
        state.say(guidance)
        return
    writer = ReplyWriter(
        rendered=state.rendered, out=state.out, spinner=state.rendered, spinner_out=state.out
    )

    def on_event(event: object) -> None:
        if isinstance(event, TextDelta):
            writer(event.text)
        elif isinstance(event, Notice):
            _notes(state, [event.text])

    options = SendOptions(new_session=state.force_new, retry=retry, incognito=state.incognito)
    state.force_new = False
    if not retry and state.attachments:
        text = "\n\n".join([text, *state.attachments])
        state.attachments = []
    try:
        outcome = state.conversation.send("" if retry else text, options, on_event)
    except RheoError as exc:  # nothing to retry, an unreadable prompt file, a purge meanwhile
        writer.finish()
        state.say(f"rheo: {exc}")
        return
    except StoreError as exc:  # busy past the bounded wait, a newer store
        writer.finish()
        state.say(f"rheo: cannot store the message: {' '.join(str(exc).split())[:200]}")
        return
    writer.finish()
    if outcome.status != "failed" and outcome.reply:
        state.last_reply = outcome.reply
    unstored = outcome.not_stored
    if outcome.status == "interrupted":
        if unstored is not None:
            state.say(f"\nrheo: interrupted; {not_stored_line(unstored)}")
        elif outcome.reply_turn_id:
            state.say("\n" + interrupted_line(outcome.reply_turn_id))
        else:
            state.say("\n[interrupted — the partial reply is not stored (incognito)]")
        if isinstance(outcome.cause, Terminated):
            raise outcome.cause from None
    elif outcome.status == "failed":
        if unstored is not None and not unstored.reply_only:
            state.say(f"rheo: {outcome.error}; {not_stored_line(unstored)}")
        else:
            state.say(f"rheo: {failed_line(outcome.error)}")
    else:
        if outcome.cut:
            _notes(state, [cut_line(outcome)])
        if unstored is not None:  # the reply came; memory could not keep it
            _notes(state, [not_stored_line(unstored)])


def _retry(state: ReplState, arg: str) -> None:
    from ..ui.output import preview

    question = state.conversation.unanswered_question()
    if question is None:
        from ..app.conversation import NOTHING_TO_RETRY

        state.say(f"rheo: {NOTHING_TO_RETRY}")
        return
    state.say(f"retrying: {preview(question, 80)}")
    run_turn(state, "", retry=True)


def _new(state: ReplState, arg: str) -> None:
    state.force_new = True
    state.say("The next message starts a new session.")


def _incognito(state: ReplState, arg: str) -> None:
    choice = arg.strip().lower()
    if choice not in ("", "on", "off"):
        state.say("usage: /incognito [on|off]")
        return
    wanted = {"on": True, "off": False}.get(choice, not state.incognito)
    state.incognito = wanted
    if wanted:
        state.say(
            "Incognito: from now on nothing is stored or learnt (memory is still read). "
            "/incognito again to resume."
        )
    else:
        state.say("Incognito off: turns are stored and remembered again.")


def _help(state: ReplState, arg: str) -> None:
    state.say(HELP)


def _exit(state: ReplState, arg: str) -> None:
    state.done = True


def _context(state: ReplState, arg: str) -> None:
    from ..app import context

    info = context.preview(state.rt, arg, new_session=state.force_new)
    for section in info["sections"]:
        state.say(section["text"])
        state.say("")
    number = context.session_number(state.rt, info)
    where = "new session" if number is None else f"session s{number}"
    state.say(f"({info['context_tokens']} of {info['budget']} tokens; {where})")


def _history(state: ReplState, arg: str) -> None:
    from ..app import history
    from ..ui.output import turn_line

    if not arg.strip():
        state.say("usage: /history QUERY")
        return
    found = history.search_turns(state.rt, arg, limit=10)
    if not found:
        state.say("(no turns)")
    now, numbers = state.rt.now(), history.session_numbers(state.rt)
    for turn, _ in found:
        state.say(turn_line(turn, now, numbers=numbers))


def _memory(state: ReplState, arg: str) -> None:
    """As `rheo memory list` (open items are under /items), or `rheo memory search`."""
    from ..app import memory
    from ..ui.items import item_line

    rt = state.rt
    if arg:
        found = memory.search(rt, arg, limit=SEARCH_LIMIT)
    else:
        found = memory.memories(rt, open_items=False)
    if not found:
        state.say("(no memories)")
    now = rt.now()
    for item in found:
        state.say(item_line(item, now, rt.settings))


def _items(state: ReplState, arg: str) -> None:
    from ..app import memory
    from ..ui.items import open_item_line

    found = memory.open_items(state.rt)
    if not found:
        state.say("(no open items)")
    now = state.rt.now()
    for item in found:
        state.say(open_item_line(item, now))


def _item_id(arg: str) -> int | None:
    text = arg.strip().lstrip("#")
    if not text.isascii() or not text.isdigit():
        return None
    value = int(text)
    return value if 1 <= value < 2**63 else None


def _change(action: str) -> Callable[[ReplState, str], None]:
    def handler(state: ReplState, arg: str) -> None:
        from ..app import memory
        from ..ui.wording import change_line

        item_id = _item_id(arg)
        if item_id is None:
            state.say(f"usage: /{action} ID")
            return
        done = memory.change(state.rt, action, item_id)
        state.say(change_line(action, done.item, already=done.already))

    return handler


def _conflicts(state: ReplState, arg: str) -> None:
    from ..app import memory
    from ..ui.items import conflict_lines

    pairs = memory.conflicts(state.rt)
    if not pairs:
        state.say("(no conflicts)")
    for newer, older in pairs:
        for line in conflict_lines(newer, older, "/resolve"):
            state.say(line)


def _digests(state: ReplState, arg: str) -> None:
    from ..app import history
    from ..ui.output import digest_line

    found = history.digests(state.rt, limit=5)
    if not found:
        state.say("(no digests)")
    now, numbers = state.rt.now(), history.session_numbers(state.rt)
    for d in found:
        state.say(digest_line(d, now, numbers))


def _sessions(state: ReplState, arg: str) -> None:
    """As `rheo sessions list -n N` (N: `SESSIONS_LIMIT` when not given)."""
    from ..app import history
    from ..ui.listings import session_lines

    text = arg.strip()
    if text and not (text.isascii() and text.isdigit() and 0 < int(text) <= 10_000):
        state.say("usage: /sessions [N]")
        return
    found = history.sessions(state.rt, int(text) if text else SESSIONS_LIMIT)
    if not found:
        state.say("(no sessions)")
        return
    for line in session_lines(found, state.rt.now()):
        state.say(line)


def _model(state: ReplState, arg: str) -> None:
    """Show the chat model, or switch to ``arg`` (checked as ``--model`` is) until the REPL
    ends; config.toml is not changed."""
    rt = state.rt
    if arg.strip():
        rt.switch_model(arg)  # a name --model would refuse: one line, the model unchanged
        state.say(f"model: {_model_name(state)} for the rest of this REPL (config unchanged)")
        return
    state.say(f"model: {_model_name(state)}")


def _model_name(state: ReplState) -> str:
    choice = state.rt.choice
    return f"{state.rt.model} ({choice.kind})" if choice is not None else state.rt.model


def _file(state: ReplState, arg: str) -> None:
    """Read the file now (as `rheo ask -f` does) and keep it for the next message."""
    from pathlib import Path

    from ..app.attachments import attached
    from ..ui.output import name_line

    name = arg.strip()
    if not name:
        state.say("usage: /file PATH")
        return
    state.attachments.append(attached(Path(name).expanduser(), name))
    count = len(state.attachments)
    more = "" if count == 1 else f" ({count} files)"
    state.say(f"attached {name_line(name)} to the next message{more}")


def _edit(state: ReplState, arg: str) -> None:
    """Write the next message in the person's editor; send it when the editor exits with
    text."""
    from ..ui.editor import NO_EDITOR, compose, editor_command

    editor = editor_command()
    if editor is None:
        state.say(f"rheo: {NO_EDITOR}")
        return
    text = compose(editor, arg)
    if not text.strip():
        state.say("(empty message: nothing sent)")
        return
    run_turn(state, text.strip("\n"))


def _copy(state: ReplState, arg: str) -> None:
    from ..ui.clipboard import copy

    if not state.last_reply:
        state.say("rheo: nothing to copy yet: no reply in this REPL")
        return
    how = copy(state.last_reply, state.out)
    state.say(f"copied the last reply ({len(state.last_reply):,} characters) with {how}")


SLASH: dict[str, Callable[[ReplState, str], None]] = {
    "/help": _help,
    "/?": _help,
    "/new": _new,
    "/retry": _retry,
    "/context": _context,
    "/history": _history,
    "/memory": _memory,
    "/items": _items,
    "/done": _change("done"),
    "/pin": _change("pin"),
    "/unpin": _change("unpin"),
    "/forget": _change("forget"),
    "/conflicts": _conflicts,
    "/resolve": _change("resolve"),
    "/digests": _digests,
    "/sessions": _sessions,
    "/model": _model,
    "/file": _file,
    "/edit": _edit,
    "/copy": _copy,
    "/incognito": _incognito,
    "/exit": _exit,
    "/quit": _exit,
}


TAKES_ID = {"/done", "/pin", "/unpin", "/forget", "/resolve"}
"""Slash commands whose argument is a memory id (Tab completes it)."""


def completion_ids(state: ReplState) -> Callable[[str], list[tuple[int, str]]]:
    """For the completer: the ids ``/done`` (open items) and the others (any active memory)
    may take, newest first, each with a preview."""

    def ids(command: str) -> list[tuple[int, str]]:
        from ..app.memory import recent
        from ..ui.output import preview

        found = recent(state.rt, open_items_only=command == "/done", limit=100)
        return [(i.id, preview(i.content_text(), 50)) for i in found]

    return ids


def run_slash(state: ReplState, line: str) -> None:
    """Run a slash command line; unknown commands get a one-line hint."""
    name, _, arg = line.partition(" ")
    handler = SLASH.get(name.lower())
    if handler is None:
        state.say(f"rheo: unknown command {name}; /help lists them")
        return
    try:
        handler(state, arg.strip())
    except Exception as exc:  # noqa: BLE001 - a slash command never ends the REPL
        if isinstance(exc, DatabaseError):  # e.g. /done on a read-only store
            state.say(f"rheo: {database_message(exc)}")
            return
        if not isinstance(exc, EngineError | RheoError):  # /file nope.md, /model foo:bar
            raise
        state.say(f"rheo: {exc}")
