"""What the REPL does with a line: a turn with the model, or a slash command."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from ..runtime import Runtime
from ..turn.assistant import Assistant, TurnFailed, TurnInterrupted

HELP = """\
/help             this list
/new              start a new session with the next message
/context [TEXT]   show the context rheo would inject for TEXT
/history QUERY    search earlier turns
/memory [QUERY]   list (or search) what rheo remembers
/items            open items (commitments)
/done ID          mark an open item done
/pin ID, /unpin ID, /forget ID   keep forever, let decay, retract a memory
/conflicts        contradicting facts; /resolve ID keeps one
/digests          summaries of recent sessions
/exit             leave (Ctrl-D too)
Esc+Enter adds a line; Ctrl-C stops a reply (the part received is kept)."""


@dataclass
class ReplState:
    """The REPL's state between lines."""

    rt: Runtime
    assistant: Assistant
    out: TextIO
    rendered: bool
    force_new: bool = False
    done: bool = False

    def say(self, text: str) -> None:
        """Print a notice line."""
        self.out.write(text + "\n")
        self.out.flush()


def run_turn(state: ReplState, text: str) -> None:
    """Send ``text`` to the model and show the streamed reply; errors become one line."""
    from ..background.worker import kick_background
    from ..ui.stream import ReplyWriter

    writer = ReplyWriter(
        rendered=state.rendered, out=state.out, spinner=state.rendered, spinner_out=state.out
    )
    new = state.force_new
    state.force_new = False
    try:
        state.assistant.turn(
            text,
            new_session=new,
            on_text=writer,
            on_context=lambda ctx: [state.say(f"rheo: note: {n}") for n in ctx.notes],
        )
        writer.finish()
    except TurnInterrupted as exc:
        writer.finish()
        state.say(f"\n[interrupted — the partial reply is kept as turn #{exc.turn.id}]")
        from ..ui.signals import Terminated

        if isinstance(exc.cause, Terminated):
            raise exc.cause from None
    except TurnFailed as exc:
        writer.finish()
        state.say(f"rheo: {exc.error}")
    except sqlite3.Error as exc:  # the ledger cannot be written: say so, keep the REPL
        writer.finish()
        state.say(f"rheo: cannot store the message: {' '.join(str(exc).split())[:200]}")
    finally:
        kick_background(state.rt)


def _new(state: ReplState, arg: str) -> None:
    state.force_new = True
    state.say("The next message starts a new session.")


def _help(state: ReplState, arg: str) -> None:
    state.say(HELP)


def _exit(state: ReplState, arg: str) -> None:
    state.done = True


def _context(state: ReplState, arg: str) -> None:
    from ..turn.assistant import preview
    from ..turn.wiring import tool_specs

    info = preview(state.rt, arg, tools=tool_specs())
    for section in info["sections"]:
        state.say(section["text"])
        state.say("")
    state.say(
        f"({info['context_tokens']} of {info['budget']} tokens; "
        f"{'session #' + str(info['session_id']) if info['session_id'] else 'new session'})"
    )


def _history(state: ReplState, arg: str) -> None:
    from ..memory.ledger import turns as ledger
    from ..ui.output import turn_line

    if not arg.strip():
        state.say("usage: /history QUERY")
        return
    found = ledger.search_turns(state.rt.conn, state.rt.profile, arg, limit=10)
    if not found:
        state.say("(no turns)")
    now = state.rt.now()
    for turn, _ in found:
        state.say(turn_line(turn, now))


def _memory(state: ReplState, arg: str) -> None:
    from ..memory.facts import items
    from ..ui.items import item_line

    rt = state.rt
    now = rt.now()
    if arg:
        found = [i for i, _ in items.search_items(rt.conn, rt.profile, arg)]
    else:  # as `rheo memory list`: most confident first (open items are under /items)
        found = items.list_items(rt.conn, rt.profile, exclude_category="open_item")
        found.sort(key=lambda i: (-i.effective(now, rt.settings), -i.id))
    if not found:
        state.say("(no memories)")
    for item in found:
        state.say(item_line(item, now, rt.settings))


def _items(state: ReplState, arg: str) -> None:
    from ..memory.facts import items
    from ..ui.output import preview

    found = items.list_items(state.rt.conn, state.rt.profile, category="open_item")
    if not found:
        state.say("(no open items)")
    for item in found:
        due = f" (due {item.due_at[:10]})" if item.due_at else ""
        state.say(f"#{item.id:<5} {preview(item.content_text(), 80)}{due}")


def _item_id(arg: str) -> int | None:
    text = arg.strip().lstrip("#")
    if not text.isascii() or not text.isdigit():
        return None
    value = int(text)
    return value if 1 <= value < 2**63 else None


def _change(action: str) -> Callable[[ReplState, str], None]:
    def handler(state: ReplState, arg: str) -> None:
        from ..memory.facts import curation
        from ..ui.output import preview

        item_id = _item_id(arg)
        if item_id is None:
            state.say(f"usage: /{action} ID")
            return
        item = curation.CHANGES[action](state.rt.conn, state.rt.profile, item_id, state.rt.now())
        state.say(f"#{item.id} {action}: {preview(item.content_text(), 80)}")

    return handler


def _conflicts(state: ReplState, arg: str) -> None:
    from ..memory.facts import curation
    from ..ui.output import preview

    pairs = curation.conflicts(state.rt.conn, state.rt.profile)
    if not pairs:
        state.say("(no conflicts)")
    for newer, older in pairs:
        state.say(
            f"#{newer.id} {preview(newer.content_text(), 60)}  vs  "
            f"#{older.id} {preview(older.content_text(), 60)}  (/resolve ID keeps one)"
        )


def _digests(state: ReplState, arg: str) -> None:
    from ..memory.ledger import digests
    from ..ui.output import local, preview

    found = digests.list_digests(state.rt.conn, state.rt.profile, limit=5)
    if not found:
        state.say("(no digests yet)")
    now = state.rt.now()
    for d in found:
        state.say(f"{local(d.ended_at, now)}  {preview(d.narrative, 90)}")


SLASH: dict[str, Callable[[ReplState, str], None]] = {
    "/help": _help,
    "/?": _help,
    "/new": _new,
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
    "/exit": _exit,
    "/quit": _exit,
}


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
        from ..memory.store.errors import EngineError

        if not isinstance(exc, EngineError):
            raise
        state.say(f"rheo: {exc}")
