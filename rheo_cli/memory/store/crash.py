"""A test-only hook that kills the process at a named point, to prove a crash loses nothing.

``RHEO_CRASH_AT=point:n`` (``n`` defaults to 1) makes the ``n``-th `reach` of ``point`` in
this process send SIGKILL to itself: no cleanup, no rollback, as a power cut or ``kill -9``
would. Points: ``turn.append`` (a turn inserted, not committed), ``reply.delta`` (after each
streamed piece of a reply), ``reply.record`` (the reply in hand, not yet stored),
``extract.store`` / ``digest.store`` (facts or digest written, job not yet committed as done),
``migrate.step`` (a migration applied, not committed), ``purge.erase`` (rows erased, not
committed), ``purge.vacuum`` (committed, file not yet rewritten), ``import.record`` (after each
imported record, not committed), ``backup.copy`` (pages copied, backup not yet checked).
Unset, `reach` costs one dict lookup.
"""

from __future__ import annotations

import os
import signal

_counts: dict[str, int] = {}


def reach(point: str) -> None:
    """Count a pass through ``point``; SIGKILL this process if RHEO_CRASH_AT names this pass."""
    spec = os.environ.get("RHEO_CRASH_AT")
    if not spec:
        return
    name, _, nth = spec.partition(":")
    if name != point:
        return
    _counts[point] = _counts.get(point, 0) + 1
    if _counts[point] == (int(nth) if nth.isdigit() else 1):
        os.kill(os.getpid(), signal.SIGKILL)
