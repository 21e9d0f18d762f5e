"""Tab completion in the REPL: slash commands, then their arguments (memory and item ids,
the path after ``/file``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from prompt_toolkit.completion import Completer, Completion
from prompt_toolkit.document import Document

IdSource = Callable[[str], list[tuple[int, str]]]
"""Given a slash command (``/done``), the ``(id, preview)`` pairs its argument may be."""


class SlashCompleter(Completer):
    """Completes ``/he`` to ``/help`` (with each command's one-line meaning), the id after
    ``/done``, ``/pin``, ``/unpin``, ``/forget``, ``/resolve`` from ``ids`` and a file's path
    after ``/file`` (``~`` expanded). Plain messages get no completions."""

    def __init__(self, commands: dict[str, str], ids: IdSource, takes_id: set[str]) -> None:
        self.commands = commands
        self.ids = ids
        self.takes_id = takes_id

    def get_completions(self, document: Document, complete_event: Any) -> Iterable[Completion]:
        """Completions for the text before the cursor (prompt-toolkit's protocol)."""
        text = document.text_before_cursor
        if not text.startswith("/") or "\n" in text:
            return
        name, space, arg = text.partition(" ")
        if not space:
            for command, meaning in self.commands.items():
                if command.startswith(name.lower()):
                    yield Completion(command, start_position=-len(name), display_meta=meaning)
            return
        if name.lower() == "/file":
            yield from _paths(arg.lstrip(), complete_event)
            return
        if name.lower() not in self.takes_id or " " in arg.strip():
            return
        typed = arg.strip().lstrip("#")
        try:
            found = self.ids(name.lower())
        except Exception:  # noqa: BLE001 - completion never breaks the prompt
            return
        for item_id, preview in found:
            if str(item_id).startswith(typed):
                yield Completion(
                    str(item_id), start_position=-len(arg.lstrip()), display_meta=preview
                )


def _paths(typed: str, complete_event: Any) -> Iterable[Completion]:
    """prompt-toolkit's path completions for ``typed`` (never raises: an unreadable folder
    gives none)."""
    from prompt_toolkit.completion import PathCompleter

    try:
        yield from PathCompleter(expanduser=True).get_completions(Document(typed), complete_event)
    except OSError:
        return
