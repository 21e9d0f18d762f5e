"""``rheo import FILE``: a rheo export, or another program's chat history, recognised by content;
``rheo import-history [FORMAT] FILE``: its alias, kept for scripts."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import UsageError
from ..ui.output import echo, print_json
from ..ui.wording import counted, plural
from .errors import command, say_error
from .inputs import file_arg
from .options import Json, Profile
from .state import runtime_for

if TYPE_CHECKING:
    from ..app.app import App
    from ..app.data import History, Records, Source, Summary

Extract = Annotated[
    bool,
    typer.Option(
        "--extract",
        help="Also queue fact extraction and digests for other tools' history (model calls, "
        "run by the background worker or 'rheo maintain'); a rheo export brings its own.",
    ),
]
IncludePurged = Annotated[
    bool,
    typer.Option(
        "--include-purged",
        help="Also bring back what 'rheo purge' erased from this store (left out otherwise).",
    ),
]


@command
def import_(
    file: Annotated[
        Path,
        typer.Argument(
            metavar="FILE",
            help="What to import: a file, a folder or a zip archive ('-': stdin).",
        ),
    ],
    from_: Annotated[
        str | None,
        typer.Option(
            "--from",
            metavar="FORMAT",
            help="Name the format instead of letting rheo recognise it: rheo, llm, chatgpt "
            "or claude.",
        ),
    ] = None,
    extract: Extract = False,
    json_out: Json = False,
    profile: Annotated[
        str | None,
        typer.Option(
            "--profile",
            "-p",
            metavar="NAME",
            help="The profile other tools' history goes into (else RHEO_PROFILE, or "
            "'default'); a rheo export goes into the profiles it names.",
        ),
    ] = None,
    include_purged: IncludePurged = False,
) -> None:
    """Import a rheo export or backup, or another tool's chat history (ChatGPT, Claude.ai, llm).

    rheo recognises what FILE holds by its content, whatever it is called: a rheo export
    (JSON Lines from 'rheo export', or 'rheo backup' on PostgreSQL), the llm CLI's logs.db
    (llm 0.4 to 0.36+), a ChatGPT export (the zip, its folder, conversations.json, or one
    conversations-NNN.json part) or a Claude.ai export (the zip, its folder or its
    conversations.json). A file it does not recognise is refused, saying what it holds.

    Safe to run again: what is already stored is skipped, recognised by its content (and a
    message of another tool also by its id there), so a second import adds nothing. What
    'rheo purge' erased is left out unless --include-purged. The import is one transaction:
    a malformed file is reported in one line and nothing is imported. Other tools' history
    keeps its times and order (each conversation its own sessions) and is learnt from only
    with --extract. 'rheo import-history' is an alias.

    \b
    Examples:
      rheo import everything.jsonl
      rheo import ~/Downloads/chatgpt-export.zip --extract
      rheo import "$(llm logs path)" --profile work
    """
    name = "-" if str(file) == "-" else file_arg(file)
    run_import(
        name, from_, extract=extract, json_out=json_out, profile=profile,
        include_purged=include_purged,
    )  # fmt: skip


@command
def import_history(
    args: Annotated[
        list[str],
        typer.Argument(
            metavar="[FORMAT] FILE",
            help="llm, chatgpt or claude (optional: rheo recognises the file), then the file, "
            "folder or zip archive to read.",
            show_default=False,
        ),
    ],
    extract: Extract = False,
    json_out: Json = False,
    profile: Profile = None,
    include_purged: IncludePurged = False,
) -> None:
    """Alias of 'rheo import', kept for scripts: import another tool's chat history.

    'rheo import-history FORMAT FILE' is 'rheo import FILE --from FORMAT'; without FORMAT,
    FILE is recognised by its content, as 'rheo import FILE' does. Everything else is
    'rheo import' (see 'rheo import --help').

    \b
    Examples:
      rheo import-history chatgpt conversations.json
      rheo import-history "$(llm logs path)" --extract
    """
    from ..app.data import FORMATS, HISTORY_FORMATS

    if len(args) > 2:
        raise UsageError(f"too many arguments: {' '.join(args[2:])} (give [FORMAT] FILE)")
    fmt, file = (args[0], Path(args[1])) if len(args) == 2 else (args[0], None)
    if file is None:
        if fmt.strip().lower() in FORMATS and not Path(fmt).exists():
            raise UsageError(f"name the file to import: rheo import-history {fmt} FILE")
        name, chosen = file_arg(Path(fmt)), None
    else:
        if fmt.strip().lower() not in FORMATS:
            raise UsageError(
                f"unknown history format {fmt!r}; use one of {', '.join(HISTORY_FORMATS)} "
                "(or leave it out: rheo recognises the file)"
            )
        name, chosen = file_arg(file), fmt
    if not name.exists():
        raise UsageError(f"{name}: no such file")
    run_import(
        name, chosen, extract=extract, json_out=json_out, profile=profile,
        include_purged=include_purged,
    )  # fmt: skip


def run_import(
    name: str | Path,
    fmt_name: str | None,
    *,
    extract: bool,
    json_out: bool,
    profile: str | None,
    include_purged: bool,
) -> None:
    """Open ``name`` (``-``: stdin), take the format ``fmt_name`` names or recognise it, read
    it and write it into the store; print what was done. Raises UsageError (exit 2) for a
    format unknown or not recognised and for a malformed history, RheoError (exit 1) for a
    file that cannot be read, a malformed rheo export and a history holding nothing rheo can
    read."""
    from ..app import data

    with data.Source.open(name) as source:
        readout = data.read(source, fmt_name, extract=extract)
        if isinstance(readout, data.History):
            _history(readout, extract=extract, json_out=json_out, profile=profile,
                     include_purged=include_purged)  # fmt: skip
        else:
            _records(source, readout, json_out=json_out, include_purged=include_purged)


def _records(source: Source, readout: Records, *, json_out: bool, include_purged: bool) -> None:
    """Import rheo's own export into the profiles it names and print the counts."""
    from ..app import data

    with runtime_for(None) as app:
        counts = data.import_records(app, source, readout, include_purged=include_purged)
    if json_out:
        print_json(
            {
                "added": counts.added,
                "already_present": counts.present,
                "left_out_purged": counts.purged,
            }
        )
        return
    added = counted(counts.added)
    echo(f"imported {added or 'nothing new'}; {counts.present} already present")
    if counts.purged:
        say_error(
            f"note: left out {plural(counts.purged, 'record')} that 'rheo purge' erased from this "
            "store; --include-purged brings them back"
        )


def _history(
    history: History,
    *,
    extract: bool,
    json_out: bool,
    profile: str | None,
    include_purged: bool,
) -> None:
    """Import another tool's history into ``profile`` and print the summary."""
    with runtime_for(profile) as app:
        summary = _write(
            app, history, extract=extract, bar=sys.stderr.isatty() and not json_out,
            include_purged=include_purged,
        )  # fmt: skip
        profile = app.profile
    for note in history.notes:
        say_error(f"note: {note}")
    if json_out:
        print_json(summary.to_json())
        return
    echo(
        f"imported {plural(summary.turns, 'turn')} from "
        f"{plural(summary.conversations, 'conversation')} "
        f"into {plural(summary.sessions, 'session')} of profile {profile!r}"
    )
    if summary.skipped:
        echo("skipped:")
        for reason, count in sorted(summary.skipped.items(), key=lambda kv: (-kv[1], kv[0])):
            echo(f"  {count:>6}  {reason}")
    if extract:
        echo(
            f"queued {summary.extract_jobs} extraction and "
            f"{plural(summary.digest_jobs, 'digest job')} ('rheo jobs list' shows them)"
        )


def _write(
    app: App, history: History, *, extract: bool, bar: bool, include_purged: bool
) -> Summary:
    """`data.import_history`, with a progress bar on stderr when ``bar``."""
    from ..app import data

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
        return data.import_history(
            app, history, extract=extract, on_row=on_row, include_purged=include_purged
        )
    finally:
        if progress is not None:
            progress.stop()
