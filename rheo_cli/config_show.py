"""Every setting's value now and where it came from, for ``rheo config show``.

A value comes from one of: ``default``, ``file`` (config.toml), ``environment`` (``RHEO_*``)
or ``flag`` (a command-line option), the later winning. ``provider`` and ``model`` show what
a chat would use now and why (`providers.factory.choose_chat`): a provider found
automatically says so (``auto-detected: ANTHROPIC_API_KEY is set``), a model nothing names is
the provider's default. Secrets are shown as ``***``, URLs with their password as ``***``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import config as config_mod
from . import config_keys as keys
from .providers import factory


@dataclass(frozen=True)
class Effective:
    """A setting's value as it may be printed (`Key.shown`), where it came from, its help."""

    name: str
    value: Any
    source: str
    help: str


def file_values(path: Path) -> dict[str, Any]:
    """What config.toml sets, checked (`config_keys.read_table`; empty when the file is
    missing). Raises ConfigError for a bad file, as every command does."""
    config_mod.load(path)
    try:
        return keys.read_table(tomllib.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return {}


def effective(
    path: Path,
    *,
    flags: Mapping[str, str | None] | None = None,
    environ: Mapping[str, str],
    assistant: str | None = None,
) -> list[Effective]:
    """Every setting (each configured assistant's keys too), resolved as commands resolve
    it. ``flags`` maps a flag (``--model``, ``--provider``) to the value given on this
    command line; ``assistant`` is the assistant talked to (its model counts for the chat).
    Raises ConfigError for a bad config file."""
    cfg = config_mod.load(path)
    values = file_values(path)
    given = {k: v for k, v in (flags or {}).items() if v}
    out = []
    for k in keys.keys_for(list(values.get(keys.ASSISTANT_NAMES, []))):
        value, source = values.get(k.name, k.default), "file" if k.name in values else "default"
        if k.env and environ.get(k.env, "").strip():
            value, source = environ[k.env].strip(), f"environment ({k.env})"
        if k.flag and k.flag in given:
            value, source = given[k.flag], f"flag ({k.flag})"
        out.append(Effective(k.name, k.shown(value), source, k.help))
    chat = _chat(cfg, given, environ, assistant)
    return [chat.get(e.name, e) for e in out]


_PROVIDER_SOURCES = {
    "--provider": "flag (--provider)",
    "-m/--model": "flag (--model)",
    "RHEO_PROVIDER": "environment (RHEO_PROVIDER)",
    "RHEO_MODEL": "environment (RHEO_MODEL)",
    "config": "file",
    "config model": "file (model)",
}


def _chat(
    cfg: config_mod.Config,
    given: Mapping[str, str],
    environ: Mapping[str, str],
    assistant: str | None,
) -> dict[str, Effective]:
    """The ``provider`` and ``model`` rows of the chat a command would have now; none
    when the options contradict each other (the commands report that)."""
    persona = cfg.assistants.get(assistant or "")
    help_of = {n: keys.BY_NAME[n].help for n in ("provider", "model")}
    try:
        choice = factory.choose_chat(
            cfg.providers,
            flag_provider=given.get("--provider"),
            flag_model=given.get("--model"),
            environ=environ,
            assistant_model=persona.model if persona else None,
        )
    except factory.NoProvider:
        return {
            "provider": Effective(
                "provider", "none", "none found ('rheo providers' says how)", help_of["provider"]
            )
        }
    except factory.SelectionError:
        return {}
    where = _PROVIDER_SOURCES.get(choice.source, choice.source)
    if choice.source == "assistant" and persona is not None:
        where = f"assistant {persona.name} (its model)"
    elif choice.source.startswith("auto: "):
        where = "auto-detected: " + choice.source.removeprefix("auto: ")
    model_where = _model_source(choice, cfg, given, environ, persona)
    rows = {
        "provider": Effective("provider", choice.kind, where, help_of["provider"]),
        "model": Effective("model", model_where[0], model_where[1], help_of["model"]),
    }
    links, _ = factory.extraction_chain(cfg.providers, choice, environ)
    if links and cfg.providers.extraction_model is None:
        help_text = keys.BY_NAME["extraction.model"].help
        why = links[0].source
        why = f"default for {choice.kind}" if why == "[extraction] model" else f"default ({why})"
        rows["extraction.model"] = Effective("extraction.model", links[0].name, why, help_text)
    return rows


def _model_source(
    choice: factory.Choice,
    cfg: config_mod.Config,
    given: Mapping[str, str],
    environ: Mapping[str, str],
    persona: config_mod.AssistantConfig | None,
) -> tuple[str, str]:
    """``(model as named, where it came from)`` for the chosen model: the first setting that
    names it (as `factory.choose_chat` reads them), else the provider's own setting or
    default."""
    named = [
        (given.get("--model"), "flag (--model)"),
        (persona.model if persona else None, f"assistant {persona.name if persona else ''}"),
        (environ.get("RHEO_MODEL", "").strip(), "environment (RHEO_MODEL)"),
        (cfg.providers.model, "file"),
    ]
    for spec, source in named:
        if spec and factory.parse_spec(spec)[1] == choice.model:
            return spec, source
    own = {
        "openai": cfg.providers.openai.model,
        "ollama": cfg.providers.ollama.model,
        "claude-code": cfg.providers.claude_code.model,
    }.get(choice.kind)
    if own == choice.model:
        return (
            choice.model,
            f"file ({keys.BY_NAME[choice.kind.replace('-', '_') + '.model'].where})",
        )
    return choice.model, f"default for {choice.kind}"
