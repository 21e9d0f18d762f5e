"""Every setting ``config.toml`` holds, with its default, where its value came from, and a
careful way to change one key of the file (`set_value`) without touching the rest of it.

A value comes from one of: ``default``, ``file`` (config.toml), ``environment`` (``RHEO_*``)
or ``flag`` (a command-line option), the later winning.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import config as config_mod
from .errors import ConfigError, UsageError


@dataclass(frozen=True)
class Key:
    """One setting: ``name`` as typed (``session.gap_hours``), its TOML ``kind`` (``str``,
    ``int``, ``float``, ``list``), how to read it from a loaded Config, and the environment
    variable or flag that can override it."""

    name: str
    kind: str
    help: str
    get: Callable[[config_mod.Config], Any]
    env: str | None = None
    flag: str | None = None
    url: bool = False
    """A URL that may carry a password: shown with it redacted (`redacted_url`)."""

    def shown(self, value: Any) -> Any:
        """``value`` as ``rheo config`` shows it (a URL's password redacted)."""
        return redacted_url(value) if self.url and isinstance(value, str) else value

    @property
    def section(self) -> str:
        """The TOML table (``""`` for the top level)."""
        return self.name.rpartition(".")[0]

    @property
    def key(self) -> str:
        """The key inside its table."""
        return self.name.rpartition(".")[2]


KEYS: tuple[Key, ...] = (
    Key(
        "provider",
        "str",
        "chat provider: anthropic, claude-code, openai, ollama (else chosen automatically)",
        lambda c: c.providers.provider,
        "RHEO_PROVIDER",
        "--provider",
    ),
    Key(
        "model",
        "str",
        "chat model, plain or provider:model (else the provider's default)",
        lambda c: c.providers.model,
        "RHEO_MODEL",
        "--model",
    ),
    Key("max_tokens", "int", "longest reply, in tokens", lambda c: c.max_tokens),
    Key("timeout", "float", "seconds without progress before a call fails", lambda c: c.timeout_s),
    Key(
        "context.budget",
        "int",
        "tokens of injected context",
        lambda c: c.engine.budget_tokens,
        flag="--budget",
    ),
    Key(
        "session.gap_hours",
        "float",
        "hours of silence that start a new session",
        lambda c: c.engine.gap_s / 3600,
    ),
    Key("memory.cap", "int", "active memory items per profile", lambda c: c.engine.cap),
    Key("memory.floor", "float", "lowest confidence decay reaches", lambda c: c.engine.floor),
    Key("memory.decay_days", "float", "days to decay to the floor", lambda c: c.engine.decay_days),
    Key(
        "extraction.model",
        "str",
        "model that extracts facts and writes digests",
        lambda c: c.providers.extraction_model,
    ),
    Key(
        "extraction.fallback",
        "list",
        'fallback extractors, "provider:model"',
        lambda c: list(c.providers.fallback),
    ),
    Key("openai.base_url", "str", "OpenAI-compatible URL", lambda c: c.providers.openai.base_url),
    Key(
        "openai.api_key_env",
        "str",
        "variable holding its key",
        lambda c: c.providers.openai.api_key_env,
    ),
    Key("openai.model", "str", "its chat model", lambda c: c.providers.openai.model),
    Key("ollama.base_url", "str", "Ollama server", lambda c: c.providers.ollama.base_url),
    Key("ollama.model", "str", "its chat model", lambda c: c.providers.ollama.model),
    Key(
        "claude_code.command",
        "str",
        "the Claude Code executable",
        lambda c: c.providers.claude_code.command,
    ),
    Key("claude_code.model", "str", "its chat model", lambda c: c.providers.claude_code.model),
    Key(
        "store.url",
        "str",
        "PostgreSQL URL: memory there instead of the local file",
        lambda c: c.store_url,
        "RHEO_DATABASE_URL",
        url=True,
    ),
    Key(
        "store.redis_url",
        "str",
        "Redis URL: hot cache of CURRENT MEMORY",
        lambda c: c.redis_url,
        "RHEO_REDIS_URL",
        url=True,
    ),
)
BY_NAME = {k.name: k for k in KEYS}


@dataclass(frozen=True)
class Effective:
    """A setting's value now and where it came from (``default``/``file``/``environment``/
    ``flag``)."""

    name: str
    value: Any
    source: str
    help: str


def raw_table(path: Path) -> dict[str, Any]:
    """config.toml as parsed TOML (empty when the file is missing). Raises ConfigError."""
    config_mod.load(path)  # checks the file the way every command does
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}


def effective(
    path: Path, *, flags: Mapping[str, str | None] | None = None, environ: Mapping[str, str]
) -> list[Effective]:
    """Every setting, resolved as commands resolve it. ``flags`` maps a flag (``--model``) to
    the value given on this command line. Raises ConfigError for a bad config file."""
    cfg = config_mod.load(path)
    raw = raw_table(path)
    out = []
    for k in KEYS:
        table = raw if not k.section else raw.get(k.section, {})
        value, source = k.get(cfg), "file" if k.key in table else "default"
        if k.env and environ.get(k.env, "").strip():
            value, source = environ[k.env].strip(), f"environment ({k.env})"
        if k.flag and flags and flags.get(k.flag):
            value, source = flags[k.flag], f"flag ({k.flag})"
        out.append(Effective(k.name, k.shown(value), source, k.help))
    return out


_SECRET_PARAM = re.compile(r"(?i)([?&](?:password|passwd|pwd|sslpassword)=)[^&]*")


def redacted_url(url: str) -> str:
    """``url`` with its password (``user:PASSWORD@`` and a ``password=`` query parameter)
    replaced by ``***``; anything else kept, so the server, database and options still show."""
    scheme, sep, rest = url.partition("://")
    if sep:
        address, slash, tail = rest.partition("/")
        credentials, at, host = address.rpartition("@")
        if at and ":" in credentials:
            user = credentials.split(":", 1)[0]
            rest = f"{user}:***@{host}{slash}{tail}"
        url = f"{scheme}{sep}{rest}"
    return _SECRET_PARAM.sub(r"\1***", url)


def parse_value(key: Key, text: str) -> Any:
    """``text`` typed on the command line as the key's TOML type. Raises UsageError."""
    text = text.strip()
    if key.kind == "str":
        if not text:
            raise UsageError(f"{key.name} needs a non-empty value")
        return text
    if key.kind == "list":
        return [part.strip() for part in text.split(",") if part.strip()]
    try:
        number = float(text) if key.kind == "float" else int(text)
    except ValueError:
        kind = "a whole number" if key.kind == "int" else "a number"
        raise UsageError(f"{key.name} must be {kind}, not {text!r}") from None
    return number


def toml_value(value: Any) -> str:
    """``value`` written as TOML (strings as basic strings, lists of strings, numbers)."""
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


_HEADER = re.compile(r"^\s*\[([^\[\]]+)\]\s*(#.*)?$")


def set_in_text(text: str, key: Key, value: Any) -> str:
    """``text`` (config.toml) with ``key`` set to ``value``; other lines and comments kept.

    The key's line is replaced where it stands, else added at the end of its table, else the
    table is added at the end."""
    lines = text.splitlines()
    line = f"{key.key} = {toml_value(value)}"
    start, end = (0, len(lines)) if not key.section else (None, len(lines))
    for i, current in enumerate(lines):
        header = _HEADER.match(current)
        if header is None:
            continue
        name = header.group(1).strip()
        if start is None and name == key.section:
            start = i + 1
        elif start is not None:
            end = i
            break
    if start is None:
        tail = [""] if lines and lines[-1].strip() else []
        return "\n".join([*lines, *tail, f"[{key.section}]", line]) + "\n"
    pattern = re.compile(rf"^\s*{re.escape(key.key)}\s*=")
    for i in range(start, end):
        if pattern.match(lines[i]):
            lines[i] = line
            return "\n".join(lines) + "\n"
    insert = end
    while insert > start and not lines[insert - 1].strip():
        insert -= 1
    lines.insert(insert, line)
    return "\n".join(lines) + "\n"


def check_text(text: str, path: Path) -> None:
    """Raise ConfigError unless ``text`` is a config.toml rheo accepts (checked through a
    temporary file beside ``path``, as `config.load` reads it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    probe = path.with_name(f".{path.name}.check-{os.getpid()}")
    try:
        probe.write_text(text, encoding="utf-8")
        try:
            config_mod.load(probe)
        except ConfigError as exc:
            raise ConfigError(str(exc).replace(str(probe), path.name)) from None
    finally:
        probe.unlink(missing_ok=True)


def replace_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a temporary file renamed over it), mode 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.new-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def set_value(path: Path, name: str, text: str) -> Any:
    """Set setting ``name`` to ``text`` in config.toml and return the value stored.

    Raises UsageError for an unknown key or a value rheo would refuse (the file is then left
    as it was), ConfigError when the existing file is itself broken."""
    key = BY_NAME.get(name)
    if key is None:
        raise UsageError(f"unknown setting {name!r}; 'rheo config show' lists them")
    value = parse_value(key, text)
    try:
        current = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        current = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    config_mod.load(path)
    updated = set_in_text(current, key, value)
    try:
        check_text(updated, path)
    except ConfigError as exc:
        message = str(exc).partition(": ")[2] if str(exc).startswith(path.name) else str(exc)
        raise UsageError(f"{name} {key.shown(text)!r} refused: {message}") from None
    replace_file(path, updated)
    return value
