"""``rheo providers``: the model providers configured, the one chat uses, the extraction
chain, and whether each provider is reachable (claude on PATH; for the APIs a key set and
their list of models answering, 2 s at most, no tokens spent). Keys are never part of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..providers import factory, reach
from ..providers.factory import Choice
from ..providers.reach import Status
from .app import App

__all__ = ["GUIDANCE", "Choice", "Report", "Status", "report"]

GUIDANCE = factory.GUIDANCE
"""How to configure a provider when none is (several lines, ending in a newline)."""


@dataclass
class Report:
    """``chat``: the chat provider and model and what chose them (None: none configured);
    ``chain``: the extraction chain in order; ``problems``: links of it that cannot be used,
    one line each; ``statuses``: every provider kind, ready or not, with what was checked."""

    chat: Choice | None
    chain: list[Choice]
    problems: list[str]
    statuses: list[Status]

    def to_json(self) -> dict[str, Any]:
        """``rheo providers --json``: ``{"chat": {"provider", "model", "source"} | None,
        "extraction": [name], "extraction_sources": [source], "extraction_problems": [str],
        "providers": [status]}``."""
        chat = self.chat
        return {
            "chat": {"provider": chat.kind, "model": chat.model, "source": chat.source}
            if chat
            else None,
            "extraction": [c.name for c in self.chain],
            "extraction_sources": [c.source for c in self.chain],
            "extraction_problems": self.problems,
            "providers": [s.to_json() for s in self.statuses],
        }


def report(app: App) -> Report:
    """The providers of ``app``'s configuration, each asked whether it is reachable (up to
    2 s per API; nothing is sent to a model)."""
    settings = app.config.providers
    statuses = reach.check_all(settings)
    chain, problems = factory.extraction_chain(settings, app.choice)
    return Report(chat=app.choice, chain=chain, problems=problems, statuses=statuses)
