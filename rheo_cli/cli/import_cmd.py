"""``rheo import-history FORMAT FILE``: bring another tool's chat history into the ledger."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import RheoError, UsageError
from ..ui.output import echo, print_json
from .errors import command
from .inputs import file_arg
from .options import Json, Profile
from .state import runtime_for

FORMAT_HELP = (
    "llm (the llm CLI's logs.db), chatgpt (conversations.json of a ChatGPT export) or "
    "claude (conversations.json of a Claude.ai export)."
)


@command
def import_history(
    fmt: Annotated[str, typer.Argument(metavar="FORMAT", help=FORMAT_HELP)],
    file: Annotated[Path, typer.Argument(metavar="FILE", help="The file to read.")],
    extract: Annotated[
        bool,
        typer.Option(
            "--extract",
            help="Also queue fact extraction and digests for the imported history "
            "(model calls, run by the background worker or 'rheo maintain').",
        ),
    ] = False,
    json_out: Json = False,
    profile: Profile = None,
    include_purged: Annotated[
        bool,
        typer.Option(
            "--include-purged",
            help="Also bring back messages 'rheo purge' erased from this profile (left out "
            "otherwise).",
        ),
    ] = False,
) -> None:
    """Import chat history from another tool, keeping its times and order.

    Safe to run again: messages already imported are skipped, recognised by their id in
    the tool or by their content (role, text, time). Messages 'rheo purge' erased are left
    out unless --include-purged. Facts are learnt from the imported history only with
    --extract.

    \b
    Examples:
      rheo import-history chatgpt conversations.json
      rheo import-history llm "$(llm logs path)" --extract
    """
    from ..transfer.history_formats import FORMATS, parser_for

    if fmt not in FORMATS:
        raise UsageError(f"unknown history format {fmt!r}; use one of {', '.join(FORMATS)}")
    file = file_arg(file)
    if not file.is_file():
        raise UsageError(f"{file}: no such file")
    parsed = parser_for(fmt)(file)
    if not parsed.conversations:
        raise RheoError(f"{file}: {no_conversations(fmt, parsed.skipped)}")
    rt = runtime_for(profile)
    summary = _write(
        rt, parsed, extract=extract, bar=sys.stderr.isatty() and not json_out,
        include_purged=include_purged,
    )  # fmt: skip
    if extract and summary.extract_jobs + summary.digest_jobs:
        from ..background.worker import kick_background

        kick_background(rt)
    if json_out:
        print_json(summary.to_json())
        return
    echo(
        f"imported {summary.turns} turn(s) from {summary.conversations} conversation(s) "
        f"into {summary.sessions} session(s) of profile {rt.profile!r}"
    )
    if summary.skipped:
        echo("skipped:")
        for reason, count in sorted(summary.skipped.items(), key=lambda kv: (-kv[1], kv[0])):
            echo(f"  {count:>6}  {reason}")
    if extract:
        echo(
            f"queued {summary.extract_jobs} extraction and {summary.digest_jobs} digest job(s)"
            " ('rheo jobs list' shows them)"
        )


def no_conversations(fmt: str, skipped: Any) -> str:
    """Why nothing was imported from a file of format ``fmt`` that held no conversation rheo
    can read (``skipped``: what the parser left out, by reason)."""
    left = ", ".join(f"{reason}: {n}" for reason, n in sorted(skipped.items()))
    return f"no {fmt} conversation rheo can read" + (f" (left out: {left})" if left else "")


def _write(rt, parsed, *, extract: bool, bar: bool, include_purged: bool = False):  # type: ignore[no-untyped-def]
    from ..memory.archive.history import import_history as write_history
    from ..memory.store.timeutil import to_stored

    progress = None
    task = None
    if bar:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

        progress = Progress(
            TextColumn("importing"),
            BarColumn(),
            MofNCompleteColumn(),
            console=Console(stderr=True),
            transient=True,
        )

    def on_row(total: int) -> None:
        nonlocal task
        if progress is None:
            return
        if task is None:
            progress.start()
            task = progress.add_task("import", total=total)
        else:
            progress.advance(task)

    try:
        return write_history(
            rt.conn,
            rt.profile,
            parsed,
            gap_s=rt.settings.gap_s,
            now=to_stored(rt.now()),
            extract=extract,
            on_row=on_row,
            include_purged=include_purged,
        )
    finally:
        if progress is not None:
            progress.stop()
