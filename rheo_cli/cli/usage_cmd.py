"""``rheo usage``: tokens spent on replies and what they cost (`app.usage`)."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import UsageError
from .errors import command
from .options import Json, Profile
from .state import runtime_for

if TYPE_CHECKING:
    from ..app.usage import Report, Totals


@command
def usage(
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="DATE",
            help="Only replies from this day on (YYYY-MM-DD, local time; or a date-time).",
        ),
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by", metavar="day|session|model", help="One row per day, session or model."
        ),
    ] = None,
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """Tokens spent on replies (input, output, cache reads and writes) and an estimate of
    their cost, from the usage stored with each reply.

    Claude Code's replies keep the price it reported; the others are priced from a table of
    list prices (Claude Opus, Sonnet and Haiku; GPT). A model without a price shows its
    tokens with the cost '—'.

    \b
    Examples:
      rheo usage
      rheo usage --since 2026-11-01 --by day
      rheo usage --by model --json
    """
    from ..app.usage import BY, report

    grouping = next((b for b in BY if b == by), None)
    if by is not None and grouping is None:
        raise UsageError(f"--by takes day, session or model, not {by[:40]!r}")
    with runtime_for(profile) as app:
        start = _since(since, app.now().tzinfo) if since is not None else None
        found = report(app, since=start, by=grouping)
    if json_out:
        from ..ui.output import print_json

        print_json(found.to_json())
        return
    _print(found)


def _since(text: str, tz: tzinfo | None) -> datetime:
    """``--since``: a day (its start, in ``tz``) or an ISO 8601 date-time (without an
    offset: in ``tz``). Raises UsageError for anything else."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"--since takes a date, YYYY-MM-DD, not {text[:40]!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=tz)
    if not 1000 <= moment.year <= 9998:
        raise UsageError(f"--since takes a date, YYYY-MM-DD, not {text[:40]!r}")
    return moment


def _print(found: Report) -> None:
    """The table: one row per group (when grouped), then the total; a note for replies
    whose cost is unknown."""
    from ..ui.output import echo
    from ..ui.tables import Column, print_table

    rows = [_cells(row) for row in found.rows]
    if found.rows or not found.by:
        rows.append(_cells(found.total))
    head = found.by or ""
    columns = [Column(head), *(Column(h, right=True) for h in HEADERS)]
    print_table(columns, rows)
    if found.total.unpriced:
        n = found.total.unpriced
        echo(f"(cost '—': {n} repl{'y' if n == 1 else 'ies'} of a model without a known price)")


HEADERS = ("replies", "input", "output", "cache read", "cache write", "cost")


def _cells(row: Totals) -> list[str]:
    cost = "—" if row.cost_usd is None else f"${row.cost_usd:,.4f}"
    if row.cost_usd is not None and row.unpriced:
        cost += " +?"
    return [
        row.key,
        f"{row.replies:,}",
        f"{row.input_tokens:,}",
        f"{row.output_tokens:,}",
        f"{row.cache_read_tokens:,}",
        f"{row.cache_write_tokens:,}",
        cost,
    ]
