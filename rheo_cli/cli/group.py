"""``rheo --help`` with its commands grouped (chat, memory, history, maintenance).

Each command names its group with typer's ``rich_help_panel``; this group class prints them
under those headings with click's plain formatter, so help needs no rich import and stays fast.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperGroup

PANELS = ("Chat", "Memory", "History", "Maintenance")
"""The headings of ``rheo --help``, in order; a command without one is listed under Commands."""


class GroupedHelp(TyperGroup):
    """A typer group whose help lists subcommands under their ``rich_help_panel`` heading,
    and whose ``--install-completion`` says which files it wrote and edited."""

    def get_params(self, ctx: Any) -> list[Any]:
        """The group's options, typer's ``--install-completion`` calling
        `completion_setup.install_and_tell`."""
        from .completion_setup import install_and_tell

        params: list[Any] = list(super().get_params(ctx))
        for param in params:
            if param.name == "install_completion":
                param.callback = install_and_tell
                param.help = (
                    "Install Tab completion for the current shell: writes a script and adds "
                    "a line loading it to ~/.bashrc or ~/.zshrc."
                )
        return params

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """Write one definition list per panel, in `PANELS` order, then any others."""
        grouped: dict[str, list[tuple[str, str]]] = {}
        found = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is None or cmd.hidden:
                continue
            found.append((name, cmd))
        if not found:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in found)
        for name, cmd in found:
            panel = getattr(cmd, "rich_help_panel", None) or "Commands"
            grouped.setdefault(panel, []).append((name, cmd.get_short_help_str(limit)))
        order = [p for p in PANELS if p in grouped] + [p for p in grouped if p not in PANELS]
        for panel in order:
            with formatter.section(panel):
                formatter.write_dl(grouped[panel])


class ListsWhenAlone(TyperGroup):
    """A group whose ``list`` command (`ALONE`) runs when no command is named: ``rheo items``
    and ``rheo items --all --json`` are ``rheo items list ...`` (``--help`` stays the
    group's)."""

    ALONE = "list"

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Put ``list`` first when ``args`` start with an option (or are empty), except while
        the shell completes a command line (``ctx.resilient_parsing``): there ``rheo memory
        <Tab>`` must offer the group's commands, not complete ``list``'s arguments."""
        if ctx.resilient_parsing:
            return list(super().parse_args(ctx, args))
        if not args or (args[0].startswith("-") and args[0] not in ctx.help_option_names):
            args = [self.ALONE, *args]
        return list(super().parse_args(ctx, args))


class RecentWhenAlone(ListsWhenAlone):
    """``rheo history`` alone is ``rheo history recent``."""

    ALONE = "recent"
