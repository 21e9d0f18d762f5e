"""``config.toml`` (beside the database), read with tomllib and checked against the one table
of settings (`rheo_cli.config_keys.KEYS`: names, types, bounds, defaults), into a `Config`.

A key the table does not hold, or a value it refuses, is a ConfigError naming the file and the
key; ``rheo config show`` lists every key, ``rheo config edit`` starts from a template of them
(`config_keys.template`).
"""

from __future__ import annotations

import stat
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import config_keys as keys
from .errors import ConfigError
from .memory.store.settings import Settings
from .providers.settings import ClaudeCodeSettings, Endpoint, ProviderSettings

MAX_PROMPT_BYTES = 256 * 1024


@dataclass(frozen=True)
class AssistantConfig:
    """One ``[assistants.NAME]`` table: a persona sharing the profile's memory (Solid#
    article's agents). ``prompt_file`` (absolute) holds a system prompt added after rheo's
    own; ``model`` is its chat model (``provider:model`` or plain), None for the usual one."""

    name: str
    prompt_file: Path | None = None
    model: str | None = None
    description: str = ""

    def prompt(self) -> str:
        """The text of ``prompt_file`` (``""`` without one), trailing space trimmed.
        Raises ConfigError when it cannot be read, is larger than `MAX_PROMPT_BYTES`, is not
        UTF-8 text or holds a NUL byte."""
        if self.prompt_file is None:
            return ""
        where = f"[assistants.{self.name}] prompt_file {self.prompt_file}"
        try:
            raw = self.prompt_file.read_bytes()[: MAX_PROMPT_BYTES + 1]
        except OSError as exc:
            raise ConfigError(f"{where}: {exc.strerror or exc}") from None
        if len(raw) > MAX_PROMPT_BYTES:
            raise ConfigError(f"{where} is larger than {MAX_PROMPT_BYTES // 1024} KB")
        try:
            text = raw.decode("utf-8").rstrip()
        except UnicodeDecodeError:
            raise ConfigError(f"{where} is not UTF-8 text") from None
        if "\x00" in text:  # no program's argument or prompt file can carry it
            raise ConfigError(f"{where} holds a NUL byte: it is not a text file")
        return text


@dataclass(frozen=True)
class Config:
    """Everything ``config.toml`` can set; ``engine`` holds the memory engine's settings."""

    max_tokens: int = 4096
    timeout_s: float = 120.0
    engine: Settings = Settings()
    telegram_token: str | None = None
    telegram_chats: tuple[tuple[int, str], ...] = ()
    """Allowed Telegram chat ids and the profile each one talks to."""
    store_url: str | None = None
    """A ``postgresql://`` URL: the store is that PostgreSQL database, not the SQLite file."""
    redis_url: str | None = None
    """A ``redis://`` URL: CURRENT MEMORY is read through a Redis hot cache."""
    redis_ttl_s: float = 30 * 86400.0
    """Lifetime (seconds) of a tenant's cached memory in Redis."""
    providers: ProviderSettings = ProviderSettings()
    assistants: dict[str, AssistantConfig] = field(default_factory=dict)
    """``[assistants.NAME]`` tables by name."""
    resident: bool = True
    """``[resident] mode``: whether ``rheo ask``, ``rheo mcp`` and memory work use the resident (its
    thin client reads config.toml itself; this is what ``rheo config show`` reports)."""
    resident_idle_s: float = 15 * 60.0
    """``[resident] idle_minutes`` in seconds."""


MAX_CONFIG_BYTES = 256 * 1024


def load(path: Path) -> Config:
    """Read ``path`` (missing file: all defaults). Raises ConfigError on bad TOML, an unknown
    key, or a value of the wrong type or range, naming the key."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return build({}, path)
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise ConfigError(f"{path} is not a regular file")
    if info.st_size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path} is larger than {MAX_CONFIG_BYTES // 1024} KB")
    try:
        raw = path.read_bytes()[:MAX_CONFIG_BYTES]
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    return parse(data, path)


def parse(data: dict[str, Any], path: Path) -> Config:
    """The Config that parsed config.toml ``data`` (read from ``path``: a relative
    ``prompt_file`` is beside it) describes. Raises ConfigError naming ``path`` and the key."""
    try:
        values = keys.read_table(data)
    except keys.BadValue as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return build(values, path)


def build(values: dict[str, Any], path: Path) -> Config:
    """A Config from checked ``values`` (`config_keys.read_table`), every key not in them at
    its table default."""

    def get(name: str) -> Any:
        return values.get(name, keys.BY_NAME[name].default)

    engine = Settings(
        gap_s=get("session.gap_hours") * 3600,
        budget_tokens=get("context.budget"),
        cap=get("memory.cap"),
        floor=get("memory.floor"),
        decay_days=get("memory.decay_days"),
    )
    providers = ProviderSettings(
        provider=get("provider"),
        model=get("model"),
        extraction_model=get("extraction.model"),
        fallback=tuple(get("extraction.fallback")),
        openai=_endpoint(get, "openai"),
        ollama=_endpoint(get, "ollama"),
        claude_code=ClaudeCodeSettings(
            command=get("claude_code.command"),
            model=get("claude_code.model"),
            extraction_model=get("claude_code.extraction_model"),
            mcp_config=get("claude_code.mcp_config"),
        ),
    )
    return Config(
        max_tokens=get("max_tokens"),
        timeout_s=get("timeout"),
        engine=engine,
        telegram_token=get("telegram.token"),
        telegram_chats=tuple((int(k), v) for k, v in get("telegram.chats").items()),
        store_url=get("store.url"),
        redis_url=get("store.redis_url"),
        redis_ttl_s=get("store.redis_ttl_days") * 86400,
        providers=providers,
        assistants=_assistants(values, path),
        resident=get("resident.mode") == "on",
        resident_idle_s=get("resident.idle_minutes") * 60,
    )


def _endpoint(get: Callable[[str], Any], section: str) -> Endpoint:
    return Endpoint(
        base_url=get(f"{section}.base_url"),
        api_key_env=get(f"{section}.api_key_env"),
        model=get(f"{section}.model"),
        extraction_model=get(f"{section}.extraction_model"),
    )


def _assistants(values: dict[str, Any], path: Path) -> dict[str, AssistantConfig]:
    """``[assistants.NAME]`` tables by name, ``prompt_file`` made absolute (relative: beside
    the config file)."""
    out: dict[str, AssistantConfig] = {}
    for name in values.get(keys.ASSISTANT_NAMES, []):
        prompt = values.get(f"assistants.{name}.prompt_file")
        prompt_path = None
        if prompt is not None:
            prompt_path = Path(prompt).expanduser()
            if not prompt_path.is_absolute():
                prompt_path = path.parent / prompt_path
        out[name] = AssistantConfig(
            name=name,
            prompt_file=prompt_path,
            model=values.get(f"assistants.{name}.model"),
            description=values.get(f"assistants.{name}.description", ""),
        )
    return out
