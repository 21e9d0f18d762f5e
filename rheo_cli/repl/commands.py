"""What the REPL does with a line: a turn with the model, or a slash command."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from ..app.app import App
from ..app.conversation import Conversation
from ..app.errors import EngineError, StoreError
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
    "/exit": "leave (Ctrl-D too)",
}
"""Each slash command's short meaning, for Tab completion."""

SEARCH_LIMIT = 50
"""The most memories ``/memory WORDS`` shows."""


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
    try:
        outcome = state.conversation.send("" if retry else text, options, on_event)
    except RheoError as exc:  # nothing to retry, an unreadable prompt file, a purge meanwhile
        writer.finish()
        state.say(f"rheo: {exc}")
        return
    except (sqlite3.Error, StoreError) as exc:  # busy past the timeout, a newer store
        writer.finish()
        state.say(f"rheo: cannot store the message: {' '.join(str(exc).split())[:200]}")
        return
    writer.finish()
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
        from ..ui.wording import database_message

        if isinstance(exc, sqlite3.Error):  # e.g. /done on a read-only store
            state.say(f"rheo: {database_message(exc)}")
            return
        if not isinstance(exc, EngineError):
            raise
        state.say(f"rheo: {exc}")
