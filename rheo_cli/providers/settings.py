"""What config.toml says about providers, as plain values (the factory's input).

``rheo_cli.config`` reads the TOML and fills these; the factory never reads files itself.
"""

from __future__ import annotations

from dataclasses import dataclass, field

KINDS = ("anthropic", "claude-code", "openai", "ollama")
"""Provider names a spec may start with (``ollama`` is an OpenAI-compatible preset)."""

OPENAI_URL = "https://api.openai.com/v1"
OLLAMA_URL = "http://localhost:11434/v1"


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible server: ``base_url`` (ends in ``/v1``), the name of the
    environment variable holding its key (``""``: no key, as for local servers), and the
    models to use when none is named (``model`` for chat, ``extraction_model`` for facts
    and digests; None: the provider's default)."""

    base_url: str
    api_key_env: str
    model: str | None = None
    extraction_model: str | None = None


@dataclass(frozen=True)
class ClaudeCodeSettings:
    """Claude Code headless (``claude -p``): the command to run, models (None: ``default``
    for chat, i.e. Claude Code's own choice, and ``haiku`` for extraction), and an MCP
    config file passed as ``--mcp-config`` when set."""

    command: str = "claude"
    model: str | None = None
    extraction_model: str | None = None
    mcp_config: str | None = None


@dataclass(frozen=True)
class ProviderSettings:
    """Everything config.toml sets about providers.

    ``provider``: the chat provider (None: chosen automatically); ``model``: the chat model,
    plain or ``provider:model``; ``extraction_model`` and ``fallback``: the extraction chain.
    """

    provider: str | None = None
    model: str | None = None
    extraction_model: str | None = None
    fallback: tuple[str, ...] = ()
    openai: Endpoint = field(default_factory=lambda: Endpoint(OPENAI_URL, "OPENAI_API_KEY"))
    ollama: Endpoint = field(default_factory=lambda: Endpoint(OLLAMA_URL, ""))
    claude_code: ClaudeCodeSettings = field(default_factory=ClaudeCodeSettings)
