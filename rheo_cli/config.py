"""``config.toml`` (beside the database), read with tomllib, checked, with defaults.

provider = "anthropic"          # anthropic | claude-code | openai | ollama (else chosen
                                # automatically; also --provider, RHEO_PROVIDER)
model = "claude-sonnet-5-5"     # chat model, plain or "provider:model" (also -m, RHEO_MODEL)
max_tokens = 4096               # longest reply, in tokens
timeout = 120                   # seconds without progress before a model call fails

[context]
budget = 2000                   # tokens of injected context

[session]
gap_hours = 2                   # a turn this long after the last one opens a new session

[memory]
cap = 50                        # active memory items per profile
floor = 0.3                     # decay floor of confidence
decay_days = 180                # days to reach the floor without reinforcement

[extraction]
model = "claude-haiku-5-5"      # the small model that extracts facts and writes digests
fallback = ["openai:gpt-5-nano"]  # tried in order when it fails ("provider:model")

[openai]                        # OpenAI or any OpenAI-compatible server (llama.cpp, vLLM)
base_url = "https://api.openai.com/v1"
api_key_env = "OPENAI_API_KEY"  # the variable holding the key; "" for servers without keys
model = "gpt-5-mini"
extraction_model = "gpt-5-nano"

[ollama]                        # the same keys; defaults: http://localhost:11434/v1, no key
model = "llama3.2"

[claude_code]                   # Claude Code headless (claude -p)
command = "claude"
model = "sonnet"                # else Claude Code's default
mcp_config = "/path/servers.json"  # passed as --mcp-config

[store]
url = "postgresql://rheo@db.example/rheo"   # PostgreSQL instead of the local SQLite file
                                            # (also RHEO_DATABASE_URL)
redis_url = "redis://127.0.0.1:6379/0"      # hot cache of CURRENT MEMORY (also RHEO_REDIS_URL)
redis_ttl_days = 30                         # how long a tenant's cached memory lives

[telegram]                      # `rheo telegram` (token also RHEO_TELEGRAM_TOKEN)
chats = { "123456789" = "default" }   # allowed chat ids, each answered with a profile

[assistants.sarah]              # an assistant: --assistant sarah (or RHEO_ASSISTANT=sarah)
prompt_file = "sarah.md"        # system prompt added after rheo's own (relative: beside this file)
model = "anthropic:claude-haiku-5-5"  # its chat model, "provider:model" or plain
description = "customer service"
"""

from __future__ import annotations

import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .memory.store.settings import Settings
from .providers.settings import (
    KINDS,
    OLLAMA_URL,
    OPENAI_URL,
    ClaudeCodeSettings,
    Endpoint,
    ProviderSettings,
)

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


_KNOWN = {
    "": {
        "provider",
        "model",
        "max_tokens",
        "timeout",
        "context",
        "session",
        "memory",
        "extraction",
        "telegram",
        "openai",
        "ollama",
        "claude_code",
        "assistants",
        "store",
    },
    "context": {"budget"},
    "session": {"gap_hours"},
    "memory": {"cap", "floor", "decay_days"},
    "extraction": {"model", "fallback"},
    "telegram": {"token", "chats"},
    "openai": {"base_url", "api_key_env", "model", "extraction_model"},
    "ollama": {"base_url", "api_key_env", "model", "extraction_model"},
    "claude_code": {"command", "model", "extraction_model", "mcp_config"},
    "store": {"url", "redis_url", "redis_ttl_days"},
}


MAX_CONFIG_BYTES = 256 * 1024


def _number(
    table: dict[str, Any], key: str, where: str, *, lo: float, hi: float, whole: bool = False
) -> float | None:
    if key not in table:
        return None
    value = table[key]
    if whole and isinstance(value, float):
        name = f"[{where}] {key}" if where else key
        raise ConfigError(f"{name} must be a whole number, not {value!r}")
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        name = f"[{where}] {key}" if where else key
        raise ConfigError(f"{name} must be a number from {lo:,g} to {hi:,.0f}, not {value!r}")
    return float(value)


def _string(table: dict[str, Any], key: str, where: str) -> str | None:
    if key not in table:
        return None
    value = table[key]
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where}{key} must be a non-empty string, not {value!r}")
    return value.strip()


def load(path: Path) -> Config:
    """Read ``path`` (missing file: all defaults). Raises ConfigError on bad TOML, an unknown
    key, or a value of the wrong type or range, naming the key."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return Config()
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
    for section, keys in _KNOWN.items():
        table = data if section == "" else data.get(section, {})
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [{section}] must be a table")
        unknown = sorted(set(table) - keys)
        if unknown:
            where = f"[{section}] " if section else ""
            raise ConfigError(f"{path}: unknown setting {where}{unknown[0]!r}")
    ctx, ses, mem, ext = (data.get(k, {}) for k in ("context", "session", "memory", "extraction"))
    base = Settings()
    budget = _number(ctx, "budget", "context", lo=0, hi=1_000_000, whole=True)
    gap = _number(ses, "gap_hours", "session", lo=0.01, hi=24 * 365)
    cap = _number(mem, "cap", "memory", lo=1, hi=100_000, whole=True)
    floor = _number(mem, "floor", "memory", lo=0, hi=1)
    decay = _number(mem, "decay_days", "memory", lo=1, hi=36_500)
    engine = Settings(
        gap_s=gap * 3600 if gap is not None else base.gap_s,
        budget_tokens=int(budget) if budget is not None else base.budget_tokens,
        cap=int(cap) if cap is not None else base.cap,
        floor=floor if floor is not None else base.floor,
        decay_days=decay if decay is not None else base.decay_days,
    )
    max_tokens = _number(data, "max_tokens", "", lo=1, hi=1_000_000, whole=True)
    timeout = _number(data, "timeout", "", lo=1, hi=3600)
    tg = data.get("telegram", {})
    st = data.get("store", {})
    store_url = _string(st, "url", "[store] ")
    if store_url is not None and not store_url.startswith(("postgresql://", "postgres://")):
        raise ConfigError(f"{path}: [store] url must start with postgresql://")
    redis_url = _string(st, "redis_url", "[store] ")
    if redis_url is not None and not redis_url.startswith(("redis://", "rediss://", "unix://")):
        raise ConfigError(f"{path}: [store] redis_url must start with redis:// or rediss://")
    ttl_days = _number(st, "redis_ttl_days", "store", lo=0.001, hi=3650)
    return Config(
        store_url=store_url,
        redis_url=redis_url,
        redis_ttl_s=ttl_days * 86400 if ttl_days is not None else 30 * 86400.0,
        telegram_token=_string(tg, "token", "[telegram] "),
        telegram_chats=_telegram_chats(tg, path),
        max_tokens=int(max_tokens) if max_tokens is not None else 4096,
        timeout_s=timeout if timeout is not None else 120.0,
        engine=engine,
        providers=_providers(data, ext),
        assistants=_assistants(data.get("assistants", {}), path),
    )


_ASSISTANT_KEYS = {"prompt_file", "model", "description"}


def _assistants(raw: Any, path: Path) -> dict[str, AssistantConfig]:
    """``[assistants.NAME]`` tables: names as `facts.scope.check_assistant` allows, keys
    `_ASSISTANT_KEYS`, ``prompt_file`` relative to the config file's folder. Raises
    ConfigError naming the bad entry."""
    from .memory.facts.scope import check_assistant
    from .memory.store.errors import InvalidInput

    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: [assistants] must hold tables like [assistants.sarah]")
    out: dict[str, AssistantConfig] = {}
    for name, table in raw.items():
        try:
            check_assistant(name)
        except InvalidInput as exc:
            raise ConfigError(f"{path}: [assistants.{name}]: {exc}") from None
        where = f"[assistants.{name}] "
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: {where.strip()} must be a table")
        unknown = sorted(set(table) - _ASSISTANT_KEYS)
        if unknown:
            raise ConfigError(f"{path}: unknown setting {where}{unknown[0]!r}")
        prompt = _string(table, "prompt_file", where)
        model = _string(table, "model", where)
        if model is not None:
            kind, _, rest = model.partition(":")
            if kind.strip().lower() in KINDS and ":" in model and not rest.strip():
                raise ConfigError(f"{path}: {where}model {model!r} names no model")
        description = table.get("description", "")
        if not isinstance(description, str):
            raise ConfigError(f"{path}: {where}description must be a string")
        prompt_path = None
        if prompt is not None:
            prompt_path = Path(prompt).expanduser()
            if not prompt_path.is_absolute():
                prompt_path = path.parent / prompt_path
        out[name] = AssistantConfig(
            name=name,
            prompt_file=prompt_path,
            model=model,
            description=" ".join(description.split())[:200],
        )
    return out


def _endpoint(table: dict[str, Any], where: str, base: Endpoint) -> Endpoint:
    url = _string(table, "base_url", f"[{where}] ") or base.base_url
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"[{where}] base_url must start with http:// or https://, not {url!r}")
    key_env = table.get("api_key_env", base.api_key_env)
    if not isinstance(key_env, str) or (key_env and not key_env.replace("_", "").isalnum()):
        raise ConfigError(
            f'[{where}] api_key_env must name an environment variable (or be ""), not {key_env!r}'
        )
    return Endpoint(
        base_url=url,
        api_key_env=key_env,
        model=_string(table, "model", f"[{where}] "),
        extraction_model=_string(table, "extraction_model", f"[{where}] "),
    )


def _providers(data: dict[str, Any], ext: dict[str, Any]) -> ProviderSettings:
    provider = _string(data, "provider", "")
    if provider is not None and provider.lower().replace("_", "-") not in KINDS:
        raise ConfigError(f"provider {provider!r}: use one of {', '.join(KINDS)}")
    fallback = ext.get("fallback", [])
    if isinstance(fallback, str):
        fallback = [fallback]
    if not isinstance(fallback, list) or not all(isinstance(f, str) for f in fallback):
        raise ConfigError('[extraction] fallback must be a list of "provider:model" strings')
    for spec in fallback:
        kind = spec.partition(":")[0].strip().lower()
        if kind not in KINDS:
            raise ConfigError(
                f'[extraction] fallback {spec!r}: use "provider:model" with provider one of '
                f"{', '.join(KINDS)}"
            )
    cc = data.get("claude_code", {})
    return ProviderSettings(
        provider=provider.lower().replace("_", "-") if provider else None,
        model=_string(data, "model", ""),
        extraction_model=_string(ext, "model", "[extraction] "),
        fallback=tuple(fallback),
        openai=_endpoint(data.get("openai", {}), "openai", Endpoint(OPENAI_URL, "OPENAI_API_KEY")),
        ollama=_endpoint(data.get("ollama", {}), "ollama", Endpoint(OLLAMA_URL, "")),
        claude_code=ClaudeCodeSettings(
            command=_string(cc, "command", "[claude_code] ") or "claude",
            model=_string(cc, "model", "[claude_code] "),
            extraction_model=_string(cc, "extraction_model", "[claude_code] "),
            mcp_config=_string(cc, "mcp_config", "[claude_code] "),
        ),
    )


def _telegram_chats(table: dict[str, Any], path: Path) -> tuple[tuple[int, str], ...]:
    """``[telegram] chats = { "<chat id>" = "<profile>" }``: ids are whole numbers (negative for
    groups), profiles valid profile names. Raises ConfigError naming the bad entry."""
    from .memory.store.errors import InvalidInput
    from .memory.store.profiles import check_profile

    raw = table.get("chats", {})
    if not isinstance(raw, dict):
        raise ConfigError(f'{path}: [telegram] chats must be a table like {{ "123" = "default" }}')
    out = []
    for key, profile in raw.items():
        try:
            chat_id = int(str(key).strip())
        except ValueError:
            raise ConfigError(f"{path}: [telegram] chats: {key!r} is not a chat id") from None
        if not isinstance(profile, str):
            raise ConfigError(f"{path}: [telegram] chats: {key} must name a profile")
        try:
            check_profile(profile)
        except InvalidInput as exc:
            raise ConfigError(f"{path}: [telegram] chats: {key}: {exc}") from None
        out.append((chat_id, profile))
    return tuple(out)
