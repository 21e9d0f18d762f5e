"""`App`: what one command works with — profile, paths, config, clock, store and provider.

Front ends build one with `build` and use it as a context manager (``with build(...) as
app:``), which closes what was opened. The store is opened and the provider created only on
first use, so commands that need no model never import an SDK; opening the store only
reads (sessions closed by time get their digest jobs when a turn or the background worker
asks, `queue_closed_sessions`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from .. import clock as clock_mod
from .. import config as config_mod
from .. import config_keys
from ..errors import ConfigError, NoProviderConfigured, UsageError
from ..memory import store as store_mod
from ..memory.store.api import Connection, Store
from ..memory.store.errors import EngineError, InvalidInput
from ..memory.store.profiles import DEFAULT_PROFILE, check_profile
from ..memory.store.settings import Settings
from ..paths import Paths, resolve
from ..providers import factory

if TYPE_CHECKING:
    from ..providers.base import Provider


@dataclass
class App:
    """What a command works with. ``choice`` is the chat provider and model (see
    `providers.factory`), None when nothing is configured (``choice_error`` says why);
    ``model`` is the chat model's name; ``assistant`` the assistant talked to (None: rheo
    itself, with the shared memory only)."""

    profile: str
    paths: Paths
    config: config_mod.Config
    clock: clock_mod.Clock
    model: str
    choice: factory.Choice | None = None
    choice_error: factory.SelectionError | None = field(default=None, repr=False)
    assistant: config_mod.AssistantConfig | None = None
    store_url: str | None = None
    """``RHEO_DATABASE_URL`` or ``[store] url``: PostgreSQL instead of the SQLite file."""
    redis_url: str | None = None
    """``RHEO_REDIS_URL`` or ``[store] redis_url``: the CURRENT MEMORY hot cache."""
    provider_flag: str | None = None
    """``--provider`` as given (None: not given), kept for `switch_model`."""
    environ: dict[str, str] | None = field(default=None, repr=False)
    """The environment the choice was made from (None: the process's), for `switch_model`."""
    _store: Store | None = field(default=None, repr=False)
    _provider: Provider | None = field(default=None, repr=False)

    @property
    def settings(self) -> Settings:
        """The memory engine's settings from config.toml."""
        return self.config.engine

    def now(self) -> datetime:
        """The current instant (aware), from ``RHEO_NOW`` or the system clock."""
        return self.clock()

    @property
    def assistant_name(self) -> str | None:
        """The chosen assistant's name (the memory scope it reads and writes), or None."""
        return self.assistant.name if self.assistant is not None else None

    def assistant_prompt(self) -> str:
        """The chosen assistant's system prompt (``""`` without one). Raises ConfigError when
        its prompt file cannot be read."""
        return self.assistant.prompt() if self.assistant is not None else ""

    @property
    def store_location(self) -> str:
        """Where memory is: `store_url` when one is set, else the SQLite file's path."""
        return self.store_url or str(self.paths.db)

    @property
    def store_class(self) -> type[Store]:
        """The store's implementation for `store_location` (nothing is opened)."""
        return store_mod.choose(self.store_location)

    @property
    def store(self) -> Store:
        """The open store (opened, created and migrated on first use, `store.open`): the
        SQLite file, or the PostgreSQL database of `store_url` bound to this runtime's
        profile as its tenant (raises StoreError when it cannot be reached; ConfigError when
        its driver, an optional extra, is not installed). With `redis_url`, memory writes
        invalidate the Redis hot cache (installed here, once). Opening writes nothing but
        what a new or older store needs (its schema)."""
        if self._store is None:
            chosen = self.store_class
            if chosen.extra is not None:
                _require(chosen.extra, chosen.extra_for)
            self._store = store_mod.open(self.store_location, tenant=self.profile)
            self._store.repair_notices.append(_say_repair)
            if self.redis_url:
                from ..cache import redis_hot

                redis_hot.install(self.redis_url, ttl_s=self.config.redis_ttl_s)
        return self._store

    @property
    def conn(self) -> Connection:
        """The open store's connection (see `store`), for the engine's functions."""
        return self.store.conn

    def queue_closed_sessions(self) -> list[int]:
        """Queue digest jobs for this profile's sessions closed by time alone (their last turn
        is older than the gap); the session ids queued. Never raises: a locked, read-only or
        unopenable store leaves them for the next turn or worker pass."""
        from ..background.worker import queue_closed

        try:
            conn = self.conn
        except EngineError:  # the store's errors included
            return []
        return queue_closed(conn, self.profile, self.now(), self.settings)

    def next_session_close(self) -> datetime | None:
        """When this profile's newest session still waiting for its digest closes by time
        (its last turn plus the gap; aware); None when none waits. Raises the engine's
        StoreError / sqlite3.Error when the store cannot be read."""
        from ..memory.ledger import closing

        return closing.next_close(self.conn, profile=self.profile, gap_s=self.settings.gap_s)

    def provider(self) -> Provider:
        """The chat provider (created on first use; its SDK is imported on its first call).

        Raises NoProviderConfigured (exit 2, with guidance) when none is configured or found,
        ConfigError when its SDK (an optional extra) is not installed, before anything is
        stored."""
        if self._provider is None:
            if self.choice is None:
                error = self.choice_error or factory.NoProvider()
                raise NoProviderConfigured(str(error), getattr(error, "detail", ""))
            if self.choice.kind in ("openai", "ollama"):
                _require("openai", f"{self.choice.kind} needs the openai SDK")
            self._provider = self.build_provider(self.choice)
        return self._provider

    def build_provider(self, choice: factory.Choice, *, tools: bool = True) -> Provider:
        """A new provider for ``choice`` with this runtime's settings (the caller closes it).
        ``tools=False``: no memory tools reach it by any route (Claude Code gets no MCP
        server), as for extraction and digests."""
        return factory.build(
            choice,
            self.config.providers,
            timeout_s=self.config.timeout_s,
            workdir=self.paths.home / "claude-code",
            memory_server=self.memory_server() if tools else None,
            tools=tools,
        )

    def memory_server(self) -> factory.MemoryServer | None:
        """How Claude Code starts rheo's MCP server for this profile (``rheo mcp``), or None
        when the ``mcp`` SDK is not installed (Claude Code then chats without memory tools)."""
        import importlib.util
        import sys

        if importlib.util.find_spec("mcp") is None:
            return None
        return factory.MemoryServer(
            argv=(sys.executable, "-m", "rheo_cli", "mcp", "--profile", self.profile),
            env=(("RHEO_HOME", str(self.paths.home)),),
        )

    def switch_model(self, model: str) -> None:
        """Chat with ``model`` (``NAME`` or ``provider:NAME``, as ``--model`` takes it) from
        now on: chosen and checked exactly as ``--model`` is (with this runtime's
        ``--provider``, assistant, environment and config). The provider is made again on
        its next use. Raises UsageError (empty, unprintable, an unknown provider prefix, one
        contradicting ``--provider``) or ConfigError, leaving the model as it was."""
        if not model.strip():
            raise UsageError("--model needs a model name")
        env = dict(os.environ) if self.environ is None else self.environ
        choice, error, chosen = _chat_choice(
            self.config, model.strip(), self.provider_flag, env, self.assistant
        )
        self.choice, self.choice_error, self.model = choice, error, chosen
        closer = getattr(self._provider, "close", None)
        self._provider = None
        if callable(closer):
            closer()

    def preload(self) -> None:
        """Start importing the chat provider's SDK on a thread (nothing when none is set)."""
        if self.choice is not None:
            factory.preload(self.choice.kind)

    def provider_ready(self) -> str | None:
        """None when a chat provider is configured or found; else the lines that say how to
        configure one (the same guidance `provider` raises with). Checked before anything is
        stored, so a first run without a provider leaves no failed turns behind. Nothing is
        imported or called."""
        if self._provider is not None or self.choice is not None:
            return None
        error = self.choice_error or factory.NoProvider()
        detail = getattr(error, "detail", "")
        return f"{error}\n{detail}".rstrip() if detail else str(error)

    def set_provider(self, provider: Provider) -> None:
        """Use ``provider`` instead of the configured one (tests, alternative backends)."""
        self._provider = provider

    def mend_lost_wal(self) -> str | None:
        """When something under this process changed how the open store must be open (the
        SQLite file's -wal removed, which this process would go on writing unseen by any
        other, and lose if killed): the store puts it right and is open again
        (`api.Store.refresh`). Returns the note saying so, else None (a stat at most)."""
        if self._store is None:
            return None
        return self._store.refresh()

    def __enter__(self) -> App:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the store and the provider's connections if they were opened (again: a
        no-op)."""
        if self._store is not None:
            self._store.close()
            self._store = None
            if self.redis_url:
                from ..cache import redis_hot

                redis_hot.uninstall()
        closer = getattr(self._provider, "close", None)
        self._provider = None
        if callable(closer):
            closer()


def _say_repair(line: str) -> None:
    """A search index rebuilt so that a write could go through: one note on stderr."""
    import sys

    text = "".join(c if c.isprintable() else " " for c in line)  # SQLite's words, index names
    sys.stderr.write(f"rheo: note: {' '.join(text.split())}\n")


def _require(extra: str, what: str) -> None:
    """Raise ConfigError ``what: <install hint>`` when the optional ``extra`` is missing."""
    from .. import extras

    if extras.missing(extra):
        raise ConfigError(f"{what}: {extras.install_hint(extra)}")


def build(
    *,
    profile: str | None = None,
    model: str | None = None,
    provider: str | None = None,
    environ: dict[str, str] | None = None,
    assistant: str | None = None,
) -> App:
    """Resolve everything from options and the environment (``provider``: ``--provider``,
    ``assistant``: ``--assistant``, else ``RHEO_ASSISTANT``; its ``model`` comes after the
    command-line options).

    Raises UsageError for a bad profile name, contradicting options or an assistant that
    config.toml does not name, ConfigError for a bad config file, RHEO_NOW or RHEO_PROVIDER.
    No provider configured is not an error here: `App.provider` reports it, so commands
    that need no model still work.
    """
    env = dict(os.environ) if environ is None else environ
    name = profile_name(profile, env)
    paths = resolve(name, env)
    cfg = config_mod.load(paths.config)
    if model is not None and not model.strip():
        raise UsageError("--model needs a model name")
    if provider is not None and not provider.strip():
        raise UsageError("--provider needs a provider name")
    persona = _assistant(cfg, assistant, env)
    choice, error, chosen = _chat_choice(cfg, model, provider, env, persona)
    store_url = _from_env("store.url", env) or cfg.store_url
    # A Redis URL the cache cannot use is one notice, never a refusal: memory goes on without it.
    redis_url = env.get("RHEO_REDIS_URL", "").strip() or cfg.redis_url
    return App(
        profile=name,
        paths=paths,
        config=cfg,
        clock=clock_mod.from_env(env),
        model=chosen,
        choice=choice,
        choice_error=error,
        assistant=persona,
        store_url=store_url or None,
        redis_url=redis_url or None,
        provider_flag=provider,
        environ=environ,
    )


def _chat_choice(
    cfg: config_mod.Config,
    model: str | None,
    provider: str | None,
    env: dict[str, str],
    persona: config_mod.AssistantConfig | None,
) -> tuple[factory.Choice | None, factory.SelectionError | None, str]:
    """The chat provider chosen by the options, the environment, config.toml and the
    assistant (None, and why, when none is configured or found), and the chat model's name.
    Raises UsageError or ConfigError for a choice that cannot be used or a bad model name."""
    choice: factory.Choice | None = None
    error: factory.SelectionError | None = None
    try:
        choice = factory.choose_chat(
            cfg.providers,
            flag_provider=provider,
            flag_model=model,
            environ=env,
            assistant_model=persona.model if persona else None,
        )
    except factory.NoProvider as exc:
        error = exc
    except factory.SelectionError as exc:
        raise (UsageError(str(exc)) if exc.usage else ConfigError(str(exc))) from None
    chosen = (
        choice.model
        if choice
        else factory.parse_spec(model or env.get("RHEO_MODEL", "") or cfg.providers.model or "")[1]
        or factory.DEFAULT_CHAT_MODEL["anthropic"]
    )
    if not chosen.strip():
        raise ConfigError("the model name is empty")
    if not chosen.isprintable() or any(0xD800 <= ord(ch) <= 0xDFFF for ch in chosen):
        raise UsageError("the model name must be printable text")
    return choice, error, chosen


def profile_name(profile: str | None, environ: Mapping[str, str] | None = None) -> str:
    """The profile a command works on: ``profile`` (``--profile``), else ``RHEO_PROFILE``,
    else ``default``. Raises UsageError for a name that is not a valid profile name."""
    env = os.environ if environ is None else environ
    if profile is not None:
        name = profile
    else:
        name = env.get("RHEO_PROFILE", "").strip() or DEFAULT_PROFILE
    try:
        check_profile(name)
    except InvalidInput as exc:
        raise UsageError(str(exc)) from None
    return name


def _from_env(name: str, env: dict[str, str]) -> str | None:
    """The value the environment gives setting ``name`` (its variable in the table of
    settings), checked as config.toml's would be; None when the variable is unset. Raises
    UsageError naming the variable for a value the setting refuses."""
    key = config_keys.BY_NAME[name]
    raw = env.get(key.env or "", "").strip()
    if not raw:
        return None
    try:
        return str(key.read(raw))
    except config_keys.BadValue as exc:
        raise UsageError(f"{key.env}: {str(exc).replace(key.where, 'the value')}") from None


def _assistant(
    cfg: config_mod.Config, flag: str | None, env: dict[str, str]
) -> config_mod.AssistantConfig | None:
    """The assistant named by ``--assistant`` or ``RHEO_ASSISTANT`` (None when neither).
    Raises UsageError for a name config.toml does not define."""
    if flag is not None and not flag.strip():
        raise UsageError("--assistant needs an assistant name")
    where = "--assistant" if flag is not None else "RHEO_ASSISTANT"
    name = (flag if flag is not None else env.get("RHEO_ASSISTANT", "")).strip()
    if not name:
        return None
    found = cfg.assistants.get(name)
    if found is None:
        known = ", ".join(sorted(cfg.assistants))
        hint = (
            f"configured: {known}"
            if known
            else "none is configured (add an [assistants.NAME] table to config.toml)"
        )
        raise UsageError(f"{where}: unknown assistant {name[:60]!r}; {hint}")
    return found
