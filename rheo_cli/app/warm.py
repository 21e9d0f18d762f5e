"""Readying a process that forks requests (the resident rheo): what the first turn of a
fresh process would otherwise pay for — the modules a turn imports late and the regular
expressions the query analysis compiles on first use — done once, before any fork. Touches no
store and no network."""

from __future__ import annotations

import contextlib
from datetime import UTC, datetime

LATE_MODULES = (
    "encodings.idna",
    "rheo_cli.app.events",
    "rheo_cli.app.conversation",
    "rheo_cli.app.tools.chat",
    "rheo_cli.app.worker_process",
    "rheo_cli.memory.ledger.closing",
    "rheo_cli.ui.stream",
    "rheo_cli.ui.output",
    "rheo_cli.ui.wording",
    "rheo_cli.mcpserver.server",
    # what `rheo mcp` imports once it serves: the transport, anyio's asyncio backend and the
    # MCP SDK's log handler (rich)
    "rheo_cli.mcpserver.transport",
    "rheo_cli.ready",
    "anyio._backends._asyncio",
    "anyio.streams.stapled",
    "rich.logging",
    "rich.console",
    # the SQLite store, chosen when a command opens it (`memory.store.choose`)
    "rheo_cli.memory.store.sqlite",
    "rheo_cli.memory.store.sqlite.search",
    "rheo_cli.memory.store.sqlite.purge",
    "rheo_cli.memory.store.sqlite.backup",
)


def prepare() -> None:
    """Import `LATE_MODULES` and analyse one sample question (its patterns compiled and
    cached). Never raises: what is left undone is done by the first turn, as without it."""
    for name in LATE_MODULES:
        with contextlib.suppress(Exception):
            __import__(name)
    with contextlib.suppress(Exception):
        from ..memory.retrieval import query

        sample = "What did Ana say last Tuesday, two weeks ago, about the trip in May 2026?"
        query.analyse(sample, datetime.now(UTC))
