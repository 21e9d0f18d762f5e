"""The chain of small models that extract facts and write digests (seed 2's fallback chain)."""

from __future__ import annotations

from dataclasses import dataclass

from ..providers.base import ChatRequest, Provider, ProviderError, SystemBlock, ToolSpec
from ..runtime import Runtime


@dataclass(frozen=True)
class Extractor:
    """One link of the chain: a provider and the model to ask."""

    name: str
    provider: Provider
    model: str


class AllExtractorsFailed(Exception):
    """Every extractor in the chain failed; the message lists each one's error."""


def chain_for(rt: Runtime) -> list[Extractor]:
    """The configured chain: ``[extraction] model`` on Anthropic, then each ``fallback``
    (``"anthropic:<model>"``) in order."""
    from ..providers.anthropic_api import AnthropicProvider

    links = [
        Extractor(
            f"anthropic:{rt.config.extract_model}",
            AnthropicProvider(timeout_s=rt.config.timeout_s),
            rt.config.extract_model,
        )
    ]
    for spec in rt.config.extract_fallback:
        kind, _, model = spec.partition(":")
        if kind == "anthropic":
            links.append(Extractor(spec, AnthropicProvider(timeout_s=rt.config.timeout_s), model))
    return links


def complete(
    chain: list[Extractor],
    *,
    system: str,
    user: str,
    max_tokens: int = 1500,
    tool: ToolSpec | None = None,
) -> tuple[str, str, list[str]]:
    """Ask each extractor in turn until one answers: ``(text, model, errors_before_it)``.

    With ``tool`` the model is made to call it (structured output) and ``text`` is the call's
    input as JSON; a provider that cannot force a call answers in text, read the same way.
    Raises AllExtractorsFailed with every error when none answers."""
    errors: list[str] = []
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
        return text, model, errors
    raise AllExtractorsFailed("; ".join(errors) or "no extractor configured")
