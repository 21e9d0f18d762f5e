"""The categories of memory items, on their own so that a front end can name them (the MCP
server's schema) without importing the rest of the engine."""

from __future__ import annotations

CATEGORIES = (
    "goal",
    "blocker",
    "preference",
    "operations",
    "team",
    "strategy",
    "win",
    "open_item",
    "fact",
)
"""The Solid# article's categories plus ``fact`` for anything else."""
