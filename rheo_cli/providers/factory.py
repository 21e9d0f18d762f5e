"""The one place where a provider is chosen and built from settings (chat and extraction).

A model is named ``provider:model`` anywhere (``openai:gpt-5-mini``, ``ollama:llama3.2``,
``claude-code:sonnet``, ``claude-code`` alone, ``anthropic:claude-sonnet-5-5``) or plainly
(``claude-sonnet-5-5``: the chosen provider's model). A prefix counts only when it is one of
`KINDS`, so Ollama tags such as ``llama3.2:8b`` stay whole.

The chat provider is, first found: ``--provider``, the prefix of ``-m``, the prefix of the
chosen assistant's ``model`` (``[assistants.NAME]``), ``RHEO_PROVIDER``,
the prefix of ``RHEO_MODEL``, config ``provider``, the prefix of config ``model``; else picked
automatically: the Anthropic API when ``ANTHROPIC_API_KEY``/``ANTHROPIC_AUTH_TOKEN`` is set,
else Claude Code when ``claude`` is on PATH, else OpenAI when ``OPENAI_API_KEY`` is set, else
`NoProvider` with `GUIDANCE`. Nothing here imports an SDK; `build` makes provider objects that
import theirs on first call, and `preload` starts that import early on a thread.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .base import Provider
from .redact import redact
from .settings import KINDS, OPENAI_URL, ProviderSettings

DEFAULT_CHAT_MODEL = {
    "anthropic": "claude-sonnet-5-5",
    "claude-code": "default",
    "openai": "gpt-5-mini",
    "ollama": "llama3.2",
}
"""Chat model per provider when none is named (``default``: Claude Code's own choice)."""
DEFAULT_EXTRACTION_MODEL = {
    "anthropic": "claude-haiku-5-5",
    "claude-code": "haiku",
    "openai": "gpt-5-nano",
}
"""Extraction model per provider when none is named (Ollama: its chat model)."""

GUIDANCE = """\
rheo needs a model provider, and none is configured. Choose one:
  Anthropic API:   export ANTHROPIC_API_KEY=sk-ant-...
  Claude Code:     install it (https://claude.com/claude-code), run `claude` once to log in;
                   rheo uses it when `claude` is on PATH (or: rheo ask --provider claude-code)
  OpenAI:          export OPENAI_API_KEY=sk-...   (model: -m openai:gpt-5-mini)
  Ollama (local):  ollama pull llama3.2; then rheo ask -m ollama:llama3.2
                   (or put  provider = "ollama"  in config.toml)
  Any OpenAI-compatible server (llama.cpp, vLLM): in config.toml
                   provider = "openai"
                   [openai]
                   base_url = "http://localhost:8080/v1"
                   api_key_env = ""
'rheo paths' shows where config.toml is; 'rheo providers' shows what rheo can reach.
"""


class SelectionError(Exception):
    """A provider or model named in settings cannot be used. ``usage`` is True when a
    command-line option is at fault (exit 2), False for config or the environment."""

    def __init__(self, message: str, *, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


class NoProvider(SelectionError):
    """Nothing names a provider and none was found; ``detail`` is `GUIDANCE`."""

    def __init__(self) -> None:
        super().__init__("no model provider is configured", usage=True)
        self.detail = GUIDANCE


@dataclass(frozen=True)
class Choice:
    """A provider kind (one of `KINDS`), the model to ask, and what chose it (for
    ``rheo providers``: ``--provider``, ``RHEO_PROVIDER``, ``config``, ``auto: ...``)."""

    kind: str
    model: str
    source: str = ""

    @property
    def name(self) -> str:
        """``kind:model``, as jobs and notes record it."""
        return f"{self.kind}:{self.model}"


def parse_spec(text: str) -> tuple[str | None, str]:
    """``"openai:gpt-5-mini"`` -> ``("openai", "gpt-5-mini")``; ``"claude-code"`` ->
    ``("claude-code", "")``; ``"llama3.2:8b"`` -> ``(None, "llama3.2:8b")``."""
    text = text.strip()
    head, _, tail = text.partition(":")
    if head.strip().lower() in KINDS:
        return head.strip().lower(), tail.strip()
    return None, text


def _kind(name: str, where: str, *, usage: bool) -> str:
    kind = name.strip().lower()
    if kind == "claude_code":
        kind = "claude-code"
    if kind not in KINDS:
        raise SelectionError(
            f"{where}: unknown provider {name!r} (use one of {', '.join(KINDS)})", usage=usage
        )
    return kind


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def claude_command(settings: ProviderSettings, environ: Mapping[str, str] | None = None) -> str:
    """The full path of the Claude Code executable, or ``""`` when it is not found."""
    env = _env(environ)
    return shutil.which(settings.claude_code.command, path=env.get("PATH")) or ""


def _auto(settings: ProviderSettings, env: Mapping[str, str]) -> tuple[str, str]:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        if env.get(name, "").strip():
            return "anthropic", f"auto: {name} is set"
    if claude_command(settings, env):
        return "claude-code", "auto: claude is on PATH"
    key_env = settings.openai.api_key_env or "OPENAI_API_KEY"
    if env.get(key_env, "").strip():
        return "openai", f"auto: {key_env} is set"
    raise NoProvider()


def choose_chat(
    settings: ProviderSettings,
    *,
    flag_provider: str | None = None,
    flag_model: str | None = None,
    environ: Mapping[str, str] | None = None,
    assistant_model: str | None = None,
) -> Choice:
    """The chat provider and model (order in the module docstring). ``assistant_model`` is
    the chosen assistant's ``model`` (``provider:model`` or plain): after the command-line
    options, before the environment and the config's own model.

    Raises SelectionError (an unknown provider, ``--provider`` contradicting ``-m``'s prefix)
    or NoProvider (nothing configured or found)."""
    env = _env(environ)
    f_kind, f_model = parse_spec(flag_model) if flag_model else (None, "")
    a_kind, a_model = parse_spec(assistant_model) if assistant_model else (None, "")
    e_raw = env.get("RHEO_MODEL", "").strip()
    e_kind, e_model = parse_spec(e_raw) if e_raw else (None, "")
    c_kind, c_model = parse_spec(settings.model) if settings.model else (None, "")
    config_kind = (
        _kind(settings.provider, "config provider", usage=False) if (settings.provider) else None
    )

    candidates: list[tuple[str | None, str, bool]] = []
    if flag_provider is not None:
        candidates.append((_kind(flag_provider, "--provider", usage=True), "--provider", True))
    candidates.append((f_kind, "-m/--model", True))
    candidates.append((a_kind, "assistant", False))
    env_provider = env.get("RHEO_PROVIDER", "").strip()
    if env_provider:
        candidates.append(
            (_kind(env_provider, "RHEO_PROVIDER", usage=False), "RHEO_PROVIDER", False)
        )
    candidates += [(e_kind, "RHEO_MODEL", False), (config_kind, "config", False)]
    candidates.append((c_kind, "config model", False))
    kind, source = next(((k, s) for k, s, _ in candidates if k is not None), (None, ""))
    if flag_provider is not None and f_kind is not None and f_kind != kind:
        raise SelectionError(
            f"--provider {kind} does not match -m {flag_model} (name one provider)", usage=True
        )
    if kind is None:
        kind, source = _auto(settings, env)

    model = ""
    if f_model:
        model = f_model
    elif a_model and a_kind in (None, kind):
        model = a_model
    elif e_model and e_kind in (None, kind):
        model = e_model
    elif c_model and (c_kind == kind or (c_kind is None and config_kind in (None, kind))):
        model = c_model
    if not model:
        section = _section_model(settings, kind, extraction=False)
        model = section or DEFAULT_CHAT_MODEL[kind]
    return Choice(kind, model, source)


def _section_model(settings: ProviderSettings, kind: str, *, extraction: bool) -> str | None:
    if kind == "openai":
        ep = settings.openai
    elif kind == "ollama":
        ep = settings.ollama
    elif kind == "claude-code":
        cc = settings.claude_code
        return cc.extraction_model if extraction else cc.model
    else:
        return None
    return ep.extraction_model if extraction else ep.model


def extraction_chain(
    settings: ProviderSettings,
    chat: Choice | None,
    environ: Mapping[str, str] | None = None,
) -> tuple[list[Choice], list[str]]:
    """The extraction chain: ``[extraction] model`` (a plain name runs on the chat provider;
    unset: the provider's ``extraction_model``, else its small model), then each ``fallback``
    in order. An OpenAI-compatible server at a base_url other than OpenAI's (llama.cpp, vLLM)
    serves only its own models, so there the default is the chat model, not ``gpt-5-nano``
    (its link's ``source`` says so).

    Returns ``(choices, problems)``: a link that cannot be resolved (no chat provider for a
    plain name, an unknown provider) is left out and described in ``problems``."""
    links: list[Choice] = []
    problems: list[str] = []
    primary = settings.extraction_model
    kind, model = parse_spec(primary) if primary else (None, "")
    if kind is None and chat is None:
        problems.append("no chat provider to run the extraction model on")
    else:
        kind = kind or (chat.kind if chat else "anthropic")
        source = "[extraction] model"
        if not model:
            model, source = _default_extraction(settings, kind, chat, environ)
        links.append(Choice(kind, model, source))
    for spec in settings.fallback:
        f_kind, f_model = parse_spec(spec)
        if f_kind is None:
            problems.append(f"fallback {spec!r} names no provider")
            continue
        source = "[extraction] fallback"
        if not f_model:
            f_model, source = _default_extraction(settings, f_kind, None, environ, source)
        links.append(Choice(f_kind, f_model, source))
    return links, problems


CUSTOM_SERVER_SOURCE = "the chat model: the OpenAI-compatible server at {url} is not OpenAI"
"""The ``source`` of an extraction link that uses the chat model of a custom server."""


def _default_extraction(
    settings: ProviderSettings,
    kind: str,
    chat: Choice | None,
    environ: Mapping[str, str] | None,
    source: str = "[extraction] model",
) -> tuple[str, str]:
    """The extraction model for ``kind`` when none is named, and what chose it."""
    model = _section_model(settings, kind, extraction=True) or ""
    if model:
        return model, f"[{kind.replace('-', '_')}] extraction_model"
    base = openai_base_url(settings, environ) if kind == "openai" else OPENAI_URL
    custom = kind == "openai" and base.rstrip("/") != OPENAI_URL
    if not custom:
        model = DEFAULT_EXTRACTION_MODEL.get(kind) or ""
        if model:
            return model, source
    same = chat is not None and chat.kind == kind
    model = (chat.model if same and chat else "") or _chat_default(settings, kind)
    if custom:
        source = CUSTOM_SERVER_SOURCE.format(url=redact(base))
    return model, source


def _chat_default(settings: ProviderSettings, kind: str) -> str:
    return _section_model(settings, kind, extraction=False) or DEFAULT_CHAT_MODEL[kind]


def openai_base_url(settings: ProviderSettings, environ: Mapping[str, str] | None = None) -> str:
    """``[openai] base_url``, else ``OPENAI_BASE_URL``, else OpenAI's own."""
    env = _env(environ)
    return (
        settings.openai.base_url
        if settings.openai.base_url != OPENAI_URL
        else (env.get("OPENAI_BASE_URL", "").strip() or OPENAI_URL)
    )


@dataclass(frozen=True)
class MemoryServer:
    """How to start rheo's MCP server for one profile: the command line and the environment
    it needs (e.g. ``RHEO_HOME``)."""

    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()


def build(
    choice: Choice,
    settings: ProviderSettings,
    *,
    timeout_s: float,
    workdir: Path,
    environ: Mapping[str, str] | None = None,
    memory_server: MemoryServer | None = None,
    tools: bool = True,
) -> Provider:
    """A provider object for ``choice`` (no SDK imported, nothing connected yet).

    ``timeout_s``: seconds without progress before a call fails; ``workdir``: the private
    folder Claude Code runs in (created 0700 on first call); ``memory_server``: how to start
    rheo's MCP server, handed to Claude Code so it can use rheo's memory tools (ignored when
    ``[claude_code] mcp_config`` names a file of the person's own); ``tools=False``: Claude
    Code gets no MCP server at all (extraction and digests, which must not write memory
    themselves)."""
    if choice.kind == "anthropic":
        from .anthropic_api import AnthropicProvider

        return AnthropicProvider(timeout_s=timeout_s)
    if choice.kind in ("openai", "ollama"):
        from .openai_compat import OpenAICompatProvider

        if choice.kind == "openai":
            base, key_env = openai_base_url(settings, environ), settings.openai.api_key_env
        else:
            base, key_env = settings.ollama.base_url, settings.ollama.api_key_env
        return OpenAICompatProvider(
            name=choice.kind, base_url=base, api_key_env=key_env, timeout_s=timeout_s
        )
    from .claude_code import ClaudeCodeProvider

    cc = settings.claude_code
    return ClaudeCodeProvider(
        command=cc.command,
        workdir=workdir,
        timeout_s=timeout_s,
        mcp_config=cc.mcp_config if tools else None,
        memory_server=None if cc.mcp_config or not tools else memory_server,
    )


def preload(kind: str) -> None:
    """Start importing ``kind``'s SDK on a daemon thread (nothing for Claude Code)."""
    if kind == "anthropic":
        from . import anthropic_api

        anthropic_api.preload()
    elif kind in ("openai", "ollama"):
        from . import openai_compat

        openai_compat.preload()
