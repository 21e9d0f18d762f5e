"""Options given before the command (``rheo --profile work ask ...``), set by the root callback."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class GlobalOptions:
    """``--profile`` / ``--model`` given to ``rheo`` itself rather than to a subcommand."""

    profile: str | None = None
    model: str | None = None
    provider: str | None = None
    assistant: str | None = None
    new: bool = False


GLOBAL = GlobalOptions()


def runtime_for(  # type: ignore[no-untyped-def]
    profile: str | None = None,
    model: str | None = None,
    provider: str | None = None,
    assistant: str | None = None,
):
    """Build the App: a command's own options win over the global ones."""
    from ..app import app as runtime

    chosen = profile if profile is not None else GLOBAL.profile
    return runtime.build(
        profile=chosen,
        model=model if model is not None else GLOBAL.model,
        provider=provider if provider is not None else GLOBAL.provider,
        assistant=assistant if assistant is not None else GLOBAL.assistant,
    )
