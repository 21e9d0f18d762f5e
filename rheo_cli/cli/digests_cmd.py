"""``rheo digests``, ``rheo maintain``, ``rheo jobs``: session digests and background work."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer

from ..ui.output import echo, local, preview, print_json
from .errors import command
from .options import MAX_ID, Json, Limit, Profile
from .state import runtime_for

app = typer.Typer(
    epilog="Example: rheo digests list",
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    help="Session digests: summaries of closed sessions.",
    no_args_is_help=True,
)
jobs_app = typer.Typer(
    epilog="Example: rheo jobs list",
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    help="Background jobs: extraction, digests and memory reviews.",
    no_args_is_help=True,
)


@app.command("list")
@command
def list_(limit: Limit = 20, json_out: Json = False, profile: Profile = None) -> None:
    """List digests, newest session first.

    \b
    Example:
      rheo digests list -n 5
    """
    from ..memory.ledger import digests

    rt = runtime_for(profile)
    found = digests.list_digests(rt.conn, rt.profile, limit=limit)
    if json_out:
        print_json([d.to_json() for d in found])
        return
    if not found:
        echo("(no digests)")
    now = rt.now()
    from ..memory.ledger.sessions import session_numbers

    numbers = session_numbers(rt.conn, rt.profile)
    for d in found:
        number = numbers.get(d.session_id, d.session_id)
        echo(f"#{d.id:<5} s{number:<5} {local(d.ended_at, now)}  {preview(d.narrative, 80)}")


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
    from ..memory.ledger import digests

    rt = runtime_for(profile)
    d = digests.get_digest(rt.conn, rt.profile, digest_id)
    if json_out:
        print_json(d.to_json())
        return
    now = rt.now()
    from ..memory.ledger.sessions import session_numbers

    number = session_numbers(rt.conn, rt.profile).get(d.session_id, d.session_id)
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
    from datetime import timedelta

    from ..background.worker import run_pending, worker_lock
    from ..memory import jobs
    from ..memory.facts import consolidate
    from ..memory.store.timeutil import to_stored

    rt = runtime_for(profile)
    now = rt.now()
    if retry_failed:
        count = jobs.retry_failed(rt.conn, profile=rt.profile, ts=to_stored(now))
        if not json_out:
            echo(f"{count} failed job(s) re-queued")
    closed_before = to_stored(now - timedelta(seconds=rt.settings.gap_s))
    for session_id in jobs.sessions_awaiting_digest(
        rt.conn, profile=rt.profile, closed_before=closed_before
    ):
        jobs.enqueue(
            rt.conn, profile=rt.profile, kind="digest", ref_id=session_id, ts=to_stored(now)
        )
    # The facts are reviewed for duplicates and stale ones too, when any was written since.
    consolidate.enqueue(rt.conn, rt.profile, to_stored(now))
    import time

    total = jobs.runnable_count(
        rt.conn, wall_now=time.time(), profile=rt.profile, include_waiting=True
    )
    show_bar = sys.stderr.isatty() and not json_out and total > 0
    progress = None
    task = None
    if show_bar:
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

    def on_job(job: jobs.Job, outcome: str) -> None:
        if progress is not None and task is not None:
            progress.update(task, advance=1, description=f"{job.kind} #{job.ref_id}: {outcome}")

    try:
        with worker_lock(rt):  # never beside a detached worker: no job runs twice
            summary = run_pending(rt, profile=rt.profile, ignore_backoff=True, on_job=on_job)
    finally:
        if progress is not None:
            progress.stop()
    if json_out:
        print_json({"profile": rt.profile, **summary.to_json()})
        return
    echo(
        f"profile {rt.profile}: {len(summary.done)} job(s) done, "
        f"{len(summary.retrying)} to retry, {len(summary.failed)} failed"
    )
    if rt.store_url:
        echo(
            "(on PostgreSQL a profile sees only its own tenant: "
            "'rheo maintain --profile NAME' runs another profile's jobs)"
        )
    for job, error in summary.retrying + summary.failed:
        echo(f"  {job.kind} #{job.ref_id}: {preview(error, 100)}")
    stuck = len(jobs.list_jobs(rt.conn, rt.profile, statuses=("failed",), limit=10_000))
    if stuck:
        echo(f"{stuck} job(s) failed for good: 'rheo maintain --retry-failed' re-queues them")


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
    from ..memory import jobs

    rt = runtime_for(profile)
    found = jobs.list_jobs(rt.conn, rt.profile, limit=limit)
    if json_out:
        print_json([j.to_json() for j in found])
        return
    if not found:
        echo("(no jobs)")
    from ..memory.ledger.sessions import session_numbers

    numbers = session_numbers(rt.conn, rt.profile)
    for j in found:
        echo(job_line(j, numbers))
        for note in j.notes:
            echo(f"         - {preview(note, 90)}")
