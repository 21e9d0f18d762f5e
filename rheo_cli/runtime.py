"""Wiring done once per process: profile, paths, config, clock, store and provider.

Commands build one `Runtime` and ask it for what they need; the store is opened and the
provider created only on first use, so commands that need no model never import an SDK.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from . import clock as clock_mod
from . import config as config_mod
from .errors import ConfigError, UsageError
from .memory.store import db
from .memory.store.errors import InvalidInput
from .memory.store.profiles import DEFAULT_PROFILE, check_profile
from .memory.store.settings import Settings
from .paths import Paths, resolve

if TYPE_CHECKING:
    from .providers.base import Provider


@dataclass
class Runtime:
    """What a command works with. ``model`` is resolved: ``-m`` > ``RHEO_MODEL`` > config."""

    profile: str
    paths: Paths
    config: config_mod.Config
    clock: clock_mod.Clock
    model: str
    store_url: str | None = None
    """``RHEO_DATABASE_URL`` or ``[store] url``: PostgreSQL instead of the SQLite file."""
    redis_url: str | None = None
    """``RHEO_REDIS_URL`` or ``[store] redis_url``: the CURRENT MEMORY hot cache."""
    _conn: sqlite3.Connection | None = field(default=None, repr=False)
    _provider: Provider | None = field(default=None, repr=False)

    @property
    def settings(self) -> Settings:
        """The memory engine's settings from config.toml."""
        return self.config.engine

    def now(self) -> datetime:
        """The current instant (aware), from ``RHEO_NOW`` or the system clock."""
        return self.clock()

    @property
    def conn(self) -> sqlite3.Connection:
        """The open store (opened, created and migrated on first use): the SQLite file, or
        the PostgreSQL database of `store_url` bound to this runtime's profile as its tenant
        (raises StoreError when it cannot be reached). With `redis_url`, memory writes
        invalidate the Redis hot cache (installed here, once)."""
        if self._conn is None:
            if self.store_url:
                self._conn = db.open_url(self.store_url, tenant=self.profile)
            else:
                self._conn = db.open_store(self.paths.db)
            if self.redis_url:
                from .cache import redis_hot

                redis_hot.install(self.redis_url, ttl_s=self.config.redis_ttl_s)
        return self._conn

    def provider(self) -> Provider:
        """The chat provider (created on first use; its SDK is imported only then)."""
        if self._provider is None:
            from .providers.anthropic_api import AnthropicProvider

            self._provider = AnthropicProvider(timeout_s=self.config.timeout_s)
        return self._provider

    def set_provider(self, provider: Provider) -> None:
        """Use ``provider`` instead of the configured one (tests, alternative backends)."""
        self._provider = provider

    def close(self) -> None:
        """Close the store and the provider's connections if they were opened."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        closer = getattr(self._provider, "close", None)
        if callable(closer):
            closer()


def build(
    *,
    profile: str | None = None,
    model: str | None = None,
    environ: dict[str, str] | None = None,
) -> Runtime:
    """Resolve everything from options and the environment.

    Raises UsageError for a bad profile name, ConfigError for a bad config file or RHEO_NOW.
    """
    env = dict(os.environ) if environ is None else environ
    if profile is not None:
        name = profile
    else:
        name = env.get("RHEO_PROFILE", "").strip() or DEFAULT_PROFILE
    try:
        check_profile(name)
    except InvalidInput as exc:
        raise UsageError(str(exc)) from None
    paths = resolve(name, env)
    cfg = config_mod.load(paths.config)
    if model is not None and not model.strip():
        raise UsageError("--model needs a model name")
    chosen = (model or env.get("RHEO_MODEL", "").strip() or cfg.model).strip()
    if not chosen:
        raise ConfigError("the model name is empty")
    if not chosen.isprintable() or any(0xD800 <= ord(ch) <= 0xDFFF for ch in chosen):
        raise UsageError("the model name must be printable text")
    store_url = env.get("RHEO_DATABASE_URL", "").strip() or cfg.store_url
    if store_url and not store_url.startswith(("postgresql://", "postgres://")):
        raise UsageError("RHEO_DATABASE_URL must be a postgresql:// URL")
    redis_url = env.get("RHEO_REDIS_URL", "").strip() or cfg.redis_url
    return Runtime(
        profile=name,
        paths=paths,
        config=cfg,
        clock=clock_mod.from_env(env),
        model=chosen,
        store_url=store_url or None,
        redis_url=redis_url or None,
    )
