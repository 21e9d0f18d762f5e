"""``rheo digests``, ``rheo maintain``, ``rheo jobs``: session digests and background work."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..ui.output import echo, local, preview, print_json
from ..ui.wording import plural
from .errors import command
from .group import ListsWhenAlone
from .options import MAX_ID, Json, Limit, Profile
from .state import runtime_for

if TYPE_CHECKING:
    from ..app.jobs import Job

app = typer.Typer(
    cls=ListsWhenAlone,
    epilog="Example: rheo digests list",
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    help="Session digests: summaries of closed sessions (alone: list them).",
)
jobs_app = typer.Typer(
    cls=ListsWhenAlone,
    epilog="Example: rheo jobs list",
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    help="Background jobs: extraction, digests and memory reviews (alone: list them).",
)


@app.command("list")
@command
def list_(limit: Limit = 20, json_out: Json = False, profile: Profile = None) -> None:
    """List digests, newest session first.

    \b
    Example:
      rheo digests list -n 5
    """
    from ..app import history

    with runtime_for(profile) as app:
        found = history.digests(app, limit)
        if json_out:
            print_json([d.to_json() for d in found])
            return
        now, numbers = app.now(), history.session_numbers(app)
    if not found:
        echo("(no digests)")
        return
    from ..ui.listings import print_digests

    print_digests(found, now, numbers)


@app.command()
@command
def show(
    digest_id: Annotated[int, typer.Argument(min=1, max=MAX_ID, help="Digest id.")],
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """Show one digest in full.

    \b
    Example:
      rheo digests show 3
    """
    from ..app import history

    with runtime_for(profile) as app:
        d = history.digest(app, digest_id)
        if json_out:
            print_json(d.to_json())
            return
        now = app.now()
        number = history.session_numbers(app).get(d.session_id, d.session_id)
    echo(f"#{d.id}  session s{number}  {local(d.started_at, now)} → {local(d.ended_at, now)}")
    echo(d.narrative)
    for title, values in (("decisions", d.decisions), ("procedures", d.procedures)):
        if values:
            echo(f"{title}:")
            for v in values:
                echo(f"  - {v}")
    if d.facts:
        echo("candidate facts:")
        for f in d.facts:
            label = f.get("label", "") if isinstance(f, dict) else str(f)
            echo(f"  - {str(label)}")
    echo(
        f"source turns: {len(d.source_turn_ids)} (#{d.source_turn_ids[0]}…#{d.source_turn_ids[-1]})"
        if d.source_turn_ids
        else "source turns: none"
    )


@command
def maintain(
    json_out: Json = False,
    profile: Profile = None,
    retry_failed: Annotated[
        bool,
        typer.Option("--retry-failed", help="Re-queue jobs that failed for good, then run them."),
    ] = False,
) -> None:
    """Run pending memory work now (extraction, digests, consolidation).

    Queues digests for sessions that have closed and, when facts were written since the last
    review, a consolidation (a small model looks for duplicates and stale facts), then runs
    every pending job of this one profile in the foreground (another profile: --profile
    NAME), including ones waiting to be retried after a failure. Jobs that failed for good (5
    failed calls, or 3 failing the same way) stay failed unless --retry-failed re-queues
    them.

    \b
    Examples:
      rheo maintain
      rheo maintain --retry-failed
      rheo maintain --profile work
    """
    from ..app import jobs

    with runtime_for(profile) as app:
        if retry_failed:
            count = jobs.retry_failed(app)
            if not json_out:
                echo(f"{plural(count, 'failed job')} re-queued")
        jobs.queue_digests(app)
        jobs.queue_review(app)  # the facts reviewed too, when any was written since
        total = jobs.waiting_count(app)
        with _progress(total if sys.stderr.isatty() and not json_out else 0) as on_job:
            summary = jobs.run_pending(app, on_job)
        if json_out:
            print_json({"profile": app.profile, **summary.to_json()})
            return
        echo(
            f"profile {app.profile}: {plural(len(summary.done), 'job')} done, "
            f"{len(summary.retrying)} to retry, {len(summary.failed)} failed"
        )
        if app.store_class.serves_one_tenant:
            echo(
                "(on PostgreSQL a profile sees only its own tenant: "
                "'rheo maintain --profile NAME' runs another profile's jobs)"
            )
        for job, error in summary.retrying + summary.failed:
            echo(f"  {job.kind} #{job.ref_id}: {preview(error, 100)}")
        stuck = jobs.failed_count(app)
    if stuck:
        echo(
            f"{plural(stuck, 'job')} failed for good: 'rheo maintain --retry-failed' re-queues them"
        )


@contextlib.contextmanager
def _progress(total: int) -> Iterator[Callable[[Job, str], None]]:
    """A progress bar on stderr for ``total`` jobs (none when 0), advanced by the callback
    it yields (``on_job(job, outcome)``) and gone when the block ends."""
    if total <= 0:
        yield lambda job, outcome: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    progress.start()
    task = progress.add_task("memory work", total=total)

    def on_job(job: Job, outcome: str) -> None:
        progress.update(task, advance=1, description=f"{job.kind} #{job.ref_id}: {outcome}")

    try:
        yield on_job
    finally:
        progress.stop()


def job_line(job: object, numbers: dict[int, int] | None = None) -> str:
    """``#3    extract turn #12    done (2 attempts)``: the job's state after its last
    attempt; an earlier attempt's error is shown only while the job is still failing."""
    j: Any = job
    session = (numbers or {}).get(j.ref_id, j.ref_id)
    ref = {"digest": f"session s{session}", "consolidate": "memory review"}.get(
        j.kind, f"turn #{j.ref_id}"
    )
    tries = f"{j.attempts} attempt{'s' if j.attempts != 1 else ''}"
    if j.status == "done":
        state = f"done ({tries})" if j.attempts > 1 else "done"
    elif j.status == "failed":
        state = f"failed after {tries}: {preview(j.last_error or '', 60)}"
    elif j.status == "pending" and j.last_error:
        state = f"will retry ({tries} so far): {preview(j.last_error, 60)}"
    else:
        state = j.status
    return f"#{j.number or j.id:<5} {j.kind:<8} {ref:<14} {state}"


@jobs_app.command("list")
@command
def jobs_list(limit: Limit = 20, json_out: Json = False, profile: Profile = None) -> None:
    """List recent background jobs with their status and notes.

    \b
    Example:
      rheo jobs list
    """
    from ..app import history, jobs

    with runtime_for(profile) as app:
        found = jobs.jobs(app, limit)
        if json_out:
            print_json([j.to_json() for j in found])
            return
        numbers = history.session_numbers(app)
    if not found:
        echo("(no jobs)")
    for j in found:
        echo(job_line(j, numbers))
        for note in j.notes:
            echo(f"         - {preview(note, 90)}")
