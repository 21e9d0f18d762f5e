"""The one table of settings: every key ``config.toml`` may hold, with its type, bounds,
default, environment variable, command-line flag, help text and whether it is secret.

`rheo_cli.config.load` accepts exactly these keys and checks each value with `Key.read`;
``rheo config show`` lists them, ``rheo config set/unset`` changes them, the template that
``rheo config edit`` starts from and the README's table are written from them. A key is named
as typed on the command line: ``max_tokens`` (top level), ``session.gap_hours`` (table
``[session]``), ``assistants.sarah.model`` (one ``[assistants.NAME]`` table per assistant: the
table's keys are written ``assistants.*.model``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from .providers.settings import KINDS, OLLAMA_URL, OPENAI_URL


class BadValue(ValueError):
    """A value a key does not accept; the message names the key as config.toml writes it
    (``[memory] cap must be a number from 1 to 100,000, not 0``) and is one line."""


ASSISTANT = "assistants.*"
"""The section of every ``[assistants.NAME]`` table, as the table writes it."""
ASSISTANT_NAMES = "assistants"
"""Where `read_table` lists the assistants config.toml names (a table may set no key)."""


@dataclass(frozen=True)
class Key:
    """One setting.

    ``kind`` is its TOML type: ``str``, ``int`` (whole numbers), ``float``, ``list`` (of
    strings) or ``map`` (a table of strings, as ``[telegram] chats``). ``lo``/``hi`` bound a
    number; ``default`` is the value without one (None: unset, the program decides);
    ``example`` a valid value (the template without a default, and the tests, use it); ``env`` and
    ``flag`` override the file; ``secret`` values are never printed, ``url`` values are shown
    with their password replaced by ``***``; ``empty`` allows ``""``; ``check`` takes a value
    of the right type and returns it normalised, or raises BadValue."""

    name: str
    kind: str
    help: str
    default: Any = None
    example: Any = None
    lo: float | None = None
    hi: float | None = None
    env: str | None = None
    flag: str | None = None
    secret: bool = False
    url: bool = False
    empty: bool = False
    check: Callable[[Key, Any], Any] | None = None

    @property
    def section(self) -> str:
        """The TOML table (``""`` for the top level, ``assistants.sarah`` for an assistant)."""
        return self.name.rpartition(".")[0]

    @property
    def key(self) -> str:
        """The key inside its table."""
        return self.name.rpartition(".")[2]

    @property
    def where(self) -> str:
        """The key as config.toml writes it: ``max_tokens``, ``[memory] cap``."""
        return f"[{self.section}] {self.key}" if self.section else self.key

    @property
    def template_value(self) -> Any:
        """What the edit template shows: the default, or the example when the default is
        unset or empty."""
        return self.default if self.default not in (None, "", [], {}) else self.example

    def at(self, assistant: str) -> Key:
        """An ``assistants.*`` key for the assistant named ``assistant``."""
        return replace(self, name=f"assistants.{assistant}.{self.key}")

    def read(self, raw: Any) -> Any:
        """``raw`` (as TOML parsed it) checked and normalised: strings stripped, numbers of a
        ``float`` key as floats, a lone string of a ``list`` key as a one-element list.
        Raises BadValue naming the key."""
        value = _typed(self, raw)
        return self.check(self, value) if self.check is not None else value

    def parse(self, text: str) -> Any:
        """``text`` typed on the command line, read as this key's TOML type and checked
        (`read`): a list is comma-separated, a map is ``id=value`` pairs, comma-separated.
        Raises BadValue."""
        text = text.strip()
        value: Any = text
        if self.kind == "list":
            value = [part.strip() for part in text.split(",") if part.strip()]
        elif self.kind == "map":
            value = {}
            for pair in (p for p in text.split(",") if p.strip()):
                left, eq, right = pair.partition("=")
                if not eq:
                    raise BadValue(f'{self.where}: write pairs as "ID=NAME", not {pair.strip()!r}')
                value[left.strip()] = right.strip()
        elif self.kind in ("int", "float"):
            try:
                value = float(text) if self.kind == "float" else int(text)
            except ValueError:
                kind = "a whole number" if self.kind == "int" else "a number"
                raise BadValue(f"{self.where} must be {kind}, not {text!r}") from None
        return self.read(value)

    def shown(self, value: Any) -> Any:
        """``value`` as it may be printed: a secret as ``***`` (None when unset), a URL with
        its password replaced by ``***``."""
        if value is None or value == "":
            return value
        if self.secret:
            return "***"
        if self.url and isinstance(value, str):
            from .memory.text.safety import redact_url

            return redact_url(value)
        return value


def _typed(key: Key, raw: Any) -> Any:
    if key.kind == "str":
        if not isinstance(raw, str) or not (raw.strip() or key.empty):
            what = "a string" if key.empty else "a non-empty string"
            raise BadValue(f"{key.where} must be {what}, not {_quote(key, raw)}")
        return raw.strip()
    if key.kind in ("int", "float"):
        if key.kind == "int" and isinstance(raw, float):
            raise BadValue(f"{key.where} must be a whole number, not {raw!r}")
        lo, hi = key.lo if key.lo is not None else 0, key.hi if key.hi is not None else 1e12
        if isinstance(raw, bool) or not isinstance(raw, int | float) or not lo <= raw <= hi:
            raise BadValue(f"{key.where} must be a number from {lo:,g} to {hi:,.0f}, not {raw!r}")
        return float(raw) if key.kind == "float" else int(raw)
    if key.kind == "list":
        items = [raw] if isinstance(raw, str) else raw
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise BadValue(f"{key.where} must be a list of strings, not {_quote(key, raw)}")
        return [i.strip() for i in items if i.strip()]
    if not isinstance(raw, dict) or not all(isinstance(v, str) for v in raw.values()):
        raise BadValue(f'{key.where} must be a table like {{ "123" = "default" }}')
    return {str(k).strip(): v.strip() for k, v in raw.items()}


def _quote(key: Key, raw: Any) -> str:
    """``raw`` for an error message: a secret's value never appears."""
    return "a hidden value" if key.secret or key.url else repr(raw)


# --- checks of one key's value -------------------------------------------------------------


def _provider(key: Key, value: str) -> str:
    kind = value.lower().replace("_", "-")
    if kind not in KINDS:
        raise BadValue(f"{key.where} {value!r}: use one of {', '.join(KINDS)}")
    return kind


def _fallback(key: Key, value: list[str]) -> list[str]:
    for spec in value:
        if spec.partition(":")[0].strip().lower() not in KINDS:
            raise BadValue(
                f'{key.where} {spec!r}: use "provider:model" with provider one of '
                f"{', '.join(KINDS)}"
            )
    return value


def _model(key: Key, value: str) -> str:
    kind, colon, rest = value.partition(":")
    if colon and kind.strip().lower() in KINDS and not rest.strip():
        raise BadValue(f"{key.where} {value!r} names no model")
    return value


def _http(key: Key, value: str) -> str:
    if not value.startswith(("http://", "https://")):
        raise BadValue(f"{key.where} must start with http:// or https://, not {value!r}")
    return value


def _on_off(key: Key, value: str) -> str:
    word = value.lower()
    if word in ("on", "1", "true", "yes"):
        return "on"
    if word in ("off", "0", "false", "no"):
        return "off"
    raise BadValue(f'{key.where} must be "on" or "off", not {value!r}')


def _variable(key: Key, value: str) -> str:
    if value and not value.replace("_", "").isalnum():
        raise BadValue(f'{key.where} must name an environment variable (or be ""), not {value!r}')
    return value


def _postgres(key: Key, value: str) -> str:
    if not value.startswith(("postgresql://", "postgres://")):
        raise BadValue(f"{key.where} must start with postgresql://")
    return value


def _redis(key: Key, value: str) -> str:
    if not value.startswith(("redis://", "rediss://", "unix://")):
        raise BadValue(f"{key.where} must start with redis:// or rediss://")
    return value


def _chats(key: Key, value: dict[str, str]) -> dict[str, str]:
    from .memory.store.errors import InvalidInput
    from .memory.store.profiles import check_profile

    for chat, profile in value.items():
        try:
            int(chat)
        except ValueError:
            raise BadValue(f"{key.where}: {chat!r} is not a chat id") from None
        try:
            check_profile(profile)
        except InvalidInput as exc:
            raise BadValue(f"{key.where}: {chat}: {exc}") from None
    return value


def _description(key: Key, value: str) -> str:
    return " ".join(value.split())[:200]


def check_assistant_name(name: str) -> None:
    """Raise BadValue unless ``name`` can name an assistant (`facts.scope.check_assistant`)."""
    from .memory.facts.scope import check_assistant
    from .memory.store.errors import InvalidInput

    try:
        check_assistant(name)
    except InvalidInput as exc:
        raise BadValue(f"[assistants.{name}]: {exc}") from None


# --- the table -------------------------------------------------------------------------------

KEYS: tuple[Key, ...] = (
    Key(
        "provider",
        "str",
        "chat provider: anthropic, claude-code, openai, ollama (else chosen automatically)",
        example="anthropic",
        env="RHEO_PROVIDER",
        flag="--provider",
        check=_provider,
    ),
    Key(
        "model",
        "str",
        "chat model, plain or provider:model (else the provider's default)",
        example="claude-sonnet-5-5",
        env="RHEO_MODEL",
        flag="--model",
        check=_model,
    ),
    Key("max_tokens", "int", "longest reply, in tokens", 4096, 8192, lo=1, hi=1_000_000),
    Key(
        "timeout",
        "float",
        "seconds without progress before a model call fails",
        120.0,
        300.0,
        lo=1,
        hi=3600,
    ),
    Key(
        "context.budget",
        "int",
        "tokens of injected context",
        2000,
        3000,
        lo=0,
        hi=1_000_000,
        flag="--budget",
    ),
    Key(
        "session.gap_hours",
        "float",
        "hours of silence that start a new session",
        2.0,
        4.0,
        lo=0.01,
        hi=24 * 365,
    ),
    Key(
        "resident.mode",
        "str",
        'keep a resident rheo warm for "rheo ask", "rheo mcp" and memory work ("on" or "off")',
        "on",
        "off",
        env="RHEO_RESIDENT",
        check=_on_off,
    ),
    Key(
        "resident.idle_minutes",
        "float",
        "minutes without a request before the resident exits",
        15.0,
        30.0,
        lo=0.05,
        hi=24 * 60,
    ),
    Key("memory.cap", "int", "active memory items per profile", 50, 80, lo=1, hi=100_000),
    Key("memory.floor", "float", "lowest confidence decay reaches", 0.3, 0.25, lo=0, hi=1),
    Key(
        "memory.decay_days",
        "float",
        "days for an unreinforced fact to decay to the floor",
        180.0,
        120.0,
        lo=1,
        hi=36_500,
    ),
    Key(
        "extraction.model",
        "str",
        "the small model that extracts facts and writes digests",
        example="claude-haiku-5-5",
        check=_model,
    ),
    Key(
        "extraction.fallback",
        "list",
        'extractors tried in order when it fails, "provider:model"',
        [],
        ["openai:gpt-5-nano"],
        check=_fallback,
    ),
    Key(
        "openai.base_url",
        "str",
        "OpenAI or any OpenAI-compatible server (llama.cpp, vLLM)",
        OPENAI_URL,
        "http://localhost:8080/v1",
        check=_http,
    ),
    Key(
        "openai.api_key_env",
        "str",
        'the variable holding its key ("" for servers without keys)',
        "OPENAI_API_KEY",
        "MY_OPENAI_KEY",
        empty=True,
        check=_variable,
    ),
    Key("openai.model", "str", "its chat model", example="gpt-5-mini", check=_model),
    Key(
        "openai.extraction_model",
        "str",
        "its extraction model",
        example="gpt-5-nano",
        check=_model,
    ),
    Key(
        "ollama.base_url",
        "str",
        "the Ollama server",
        OLLAMA_URL,
        "http://10.0.0.5:11434/v1",
        check=_http,
    ),
    Key(
        "ollama.api_key_env",
        "str",
        'the variable holding its key ("": none)',
        "",
        "OLLAMA_KEY",
        empty=True,
        check=_variable,
    ),
    Key("ollama.model", "str", "its chat model", example="llama3.2", check=_model),
    Key(
        "ollama.extraction_model",
        "str",
        "its extraction model (else its chat model)",
        example="llama3.2:1b",
        check=_model,
    ),
    Key(
        "claude_code.command",
        "str",
        "the Claude Code executable",
        "claude",
        "/opt/claude/bin/claude",
    ),
    Key(
        "claude_code.model",
        "str",
        "its chat model (else Claude Code's default)",
        example="sonnet",
    ),
    Key(
        "claude_code.extraction_model",
        "str",
        "its extraction model (else haiku)",
        example="haiku",
    ),
    Key(
        "claude_code.mcp_config",
        "str",
        "an MCP config file passed as --mcp-config",
        example="/path/servers.json",
    ),
    Key(
        "store.url",
        "str",
        "PostgreSQL URL: memory there instead of the local file",
        example="postgresql://rheo@db.example/rheo",
        env="RHEO_DATABASE_URL",
        url=True,
        check=_postgres,
    ),
    Key(
        "store.redis_url",
        "str",
        "Redis URL: hot cache of CURRENT MEMORY",
        example="redis://127.0.0.1:6379/0",
        env="RHEO_REDIS_URL",
        url=True,
        check=_redis,
    ),
    Key(
        "store.redis_ttl_days",
        "float",
        "days a profile's cached memory lives in Redis",
        30.0,
        7.0,
        lo=0.001,
        hi=3650,
    ),
    Key(
        "telegram.token",
        "str",
        "the bot token for rheo telegram (from @BotFather)",
        example="123456:ABC-bot-token",
        env="RHEO_TELEGRAM_TOKEN",
        secret=True,
    ),
    Key(
        "telegram.chats",
        "map",
        "allowed chat ids, each answered with a profile",
        {},
        {"123456789": "default"},
        check=_chats,
    ),
    Key(
        f"{ASSISTANT}.prompt_file",
        "str",
        "its system prompt, added after rheo's own (relative: beside config.toml)",
        example="sarah.md",
    ),
    Key(
        f"{ASSISTANT}.model",
        "str",
        "its chat model, plain or provider:model (else the usual one)",
        example="anthropic:claude-haiku-5-5",
        check=_model,
    ),
    Key(
        f"{ASSISTANT}.description",
        "str",
        "what it is for, in a few words",
        "",
        "customer service",
        empty=True,
        check=_description,
    ),
)
BY_NAME = {k.name: k for k in KEYS}
"""Keys by name (assistant keys as ``assistants.*.KEY``)."""
SECTIONS = tuple(dict.fromkeys(k.section for k in KEYS))
"""The tables, in the table's order (``""``: the top level)."""


def lookup(name: str) -> Key:
    """The key ``name`` names (``assistants.sarah.model`` gives that assistant's key).
    Raises KeyError for a name that is no setting, BadValue for a bad assistant name."""
    if name in BY_NAME and not name.startswith(f"{ASSISTANT}."):
        return BY_NAME[name]
    head, _, rest = name.partition(".")
    assistant, dot, key = rest.rpartition(".")
    if head == "assistants" and dot and f"{ASSISTANT}.{key}" in BY_NAME:
        check_assistant_name(assistant)
        return BY_NAME[f"{ASSISTANT}.{key}"].at(assistant)
    raise KeyError(name)


def keys_for(assistants: list[str]) -> Iterator[Key]:
    """Every key, with the assistant keys once for each of ``assistants``."""
    for key in KEYS:
        if key.section == ASSISTANT:
            yield from (key.at(name) for name in assistants)
        else:
            yield key


def read_table(data: dict[str, Any]) -> dict[str, Any]:
    """Parsed config.toml checked against the table: ``{key name: value}`` for each key it
    sets (values as `Key.read` returns them; assistants' keys as ``assistants.NAME.KEY``).
    ``values[ASSISTANT_NAMES]`` lists the ``[assistants.NAME]`` tables' names, in order.
    Raises BadValue for an unknown key or table, a table that is not one, or a bad value."""
    values: dict[str, Any] = {}
    for name, raw in data.items():
        if name in SECTIONS and name:
            _read_section(name, raw, values)
        elif name == "assistants":
            if not isinstance(raw, dict):
                raise BadValue("[assistants] must hold tables like [assistants.sarah]")
            values[ASSISTANT_NAMES] = list(raw)
            for assistant, table in raw.items():
                check_assistant_name(assistant)
                _read_section(f"assistants.{assistant}", table, values)
        elif name in BY_NAME:
            values[name] = BY_NAME[name].read(raw)
        else:
            raise BadValue(f"unknown setting {name!r}")
    return values


def _read_section(section: str, raw: Any, values: dict[str, Any]) -> None:
    if not isinstance(raw, dict):
        raise BadValue(f"[{section}] must be a table")
    for key, value in raw.items():
        try:
            found = lookup(f"{section}.{key}")
        except KeyError:
            raise BadValue(f"unknown setting [{section}] {key!r}") from None
        values[found.name] = found.read(value)


def toml_value(value: Any) -> str:
    """``value`` written as TOML (strings as basic strings, lists, inline tables, numbers)."""
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        pairs = ", ".join(f"{toml_value(str(k))} = {toml_value(v)}" for k, v in value.items())
        return "{ " + pairs + " }" if pairs else "{}"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return repr(value)


def template() -> str:
    """A config.toml with every key commented out (at its default, else an example) and its
    help: what ``rheo config edit`` starts from when there is no file yet."""
    lines = ["# rheo settings (every key is optional; 'rheo config show' shows the values used)"]
    for section in SECTIONS:
        header = "assistants.sarah" if section == ASSISTANT else section
        if section:
            lines += ["#", f"# [{header}]"]
        for key in (k for k in KEYS if k.section == section):
            also = ", ".join(x for x in (key.env, key.flag) if x)
            note = f"{key.help}{f' (also {also})' if also else ''}"
            lines.append(f"# {key.key} = {toml_value(key.template_value)}  # {note}")
    return "\n".join(lines) + "\n"


def _number(value: float | None) -> str:
    """``1,000,000`` and ``0.01``: a bound as the README writes it."""
    if value is None:
        return ""
    return f"{int(value):,}" if value == int(value) else f"{value:g}"


def markdown_table() -> str:
    """The README's table of settings (one row per key), written from `KEYS`."""
    rows = [
        "| key | type | default | environment / flag | meaning |",
        "| --- | --- | --- | --- | --- |",
    ]
    for key in KEYS:
        default = "unset" if key.default is None else f"`{toml_value(key.default)}`"
        also = ", ".join(f"`{x}`" for x in (key.env, key.flag) if x)
        bounds = f" ({_number(key.lo)} to {_number(key.hi)})" if key.lo is not None else ""
        secret = "; secret, never shown" if key.secret else ""
        secret += "; its password is never shown" if key.url else ""
        rows.append(
            f"| `{key.name.replace('*', 'NAME')}` | {key.kind}{bounds} | {default} | {also} "
            f"| {key.help}{secret} |"
        )
    return "\n".join(rows) + "\n"
