"""The chain of small models that extract facts and write digests (Solid# article: a cheap
model first, another vendor's when it is down, else skip; no memory beats a failed chat)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from ..providers import factory
from ..providers.base import ChatRequest, Provider, ProviderError, SystemBlock, ToolSpec
from ..services import Services


@dataclass(frozen=True)
class Extractor:
    """One link of the chain: its ``provider:model`` name, a provider, the model to ask."""

    name: str
    provider: Provider
    model: str


class AllExtractorsFailed(Exception):
    """Every extractor in the chain failed; the message lists each one's error."""


def chain_for(rt: Services) -> list[Extractor]:
    """The configured chain, built by the provider factory: ``[extraction] model`` (on the
    chat provider when it names none), then each ``fallback`` (``"provider:model"``).

    Raises AllExtractorsFailed when no link can be built at all."""
    choices, problems = factory.extraction_chain(rt.config.providers, rt.choice)
    links = [Extractor(c.name, rt.build_provider(c, tools=False), c.model) for c in choices]
    if not links:
        raise AllExtractorsFailed("; ".join(problems) or "no extractor configured")
    return links


def complete(
    chain: list[Extractor],
    *,
    system: str,
    user: str,
    max_tokens: int = 1500,
    tool: ToolSpec | None = None,
) -> tuple[str, str, list[str]]:
    """Ask each extractor in turn until one answers: ``(text, "provider:model" that served,
    errors_before_it)``. Every provider in the chain is closed before returning.

    With ``tool`` the model is made to call it (structured output) and ``text`` is the call's
    input as JSON; a provider that cannot force a call answers in text, read the same way.
    Raises AllExtractorsFailed with every error when none answers."""
    errors: list[str] = []
    try:
        for link in chain:
            request = ChatRequest(
                model=link.model,
                system=[SystemBlock(system)],
                messages=[{"role": "user", "content": [{"type": "text", "text": user}]}],
                max_tokens=max_tokens,
                tools=[tool] if tool is not None else [],
                tool_choice=tool.name if tool is not None else None,
            )
            try:
                text, _usage, model = link.provider.complete(request)
            except ProviderError as exc:
                errors.append(f"{link.name}: {exc}")
                continue
            kind = link.name.partition(":")[0]
            return text, f"{kind}:{model or link.model}", errors
    finally:
        for link in chain:
            with contextlib.suppress(Exception):
                link.provider.close()
    raise AllExtractorsFailed("; ".join(errors) or "no extractor configured")
