"""Who calls rheo's MCP tools, and the limits its schema states: what the server needs
before the first tool call, without the memory engine."""

from __future__ import annotations

from dataclasses import dataclass

CONTENT_MAX = 100_000
"""Longest turn a client may log (characters)."""


@dataclass(frozen=True)
class Caller:
    """Who is calling: the client's name from its ``initialize`` request (``clientInfo``)."""

    client: str

    @classmethod
    def named(cls, name: str | None, version: str | None = None) -> Caller:
        """A caller from clientInfo's name and version (``unknown client`` when absent)."""
        text = " ".join((name or "").split())[:80] or "unknown client"
        if version and version.strip():
            text += f" {' '.join(version.split())[:20]}"
        return cls(text)
