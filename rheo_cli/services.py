"""What one turn and one background job work with: the `Services` a command provides.

`turn/` (store, assemble, converse, record) and `background/` (extraction, digests) take a
`Services` rather than the application object itself, so they sit below the application
layer and never import it: `app.App` is the one implementation, tests may pass their own.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from .config import Config
    from .memory.store.api import Connection, Store
    from .memory.store.settings import Settings
    from .paths import Paths
    from .providers.base import Provider
    from .providers.factory import Choice


class Services(Protocol):
    """A profile's settings, clock, store and providers, opened on first use.

    ``conn`` is the open store's connection (raises StoreError when it cannot be opened;
    ``conn.store`` is the store itself); ``store_class`` the store's implementation, known without
    opening it (what it is, e.g. whether it serves one tenant); ``now()`` the current instant
    (aware, from ``RHEO_NOW`` or the system clock); ``provider()`` the chat provider (raises
    NoProviderConfigured); ``build_provider`` a new one for another choice, which the caller closes
    (``tools=False``: no memory tools reach it by any route, as for extraction and digests)."""

    profile: str
    paths: Paths
    config: Config
    model: str
    choice: Choice | None

    @property
    def conn(self) -> Connection: ...

    @property
    def store_class(self) -> type[Store]: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def assistant_name(self) -> str | None: ...

    def now(self) -> datetime: ...

    def assistant_prompt(self) -> str: ...

    def provider(self) -> Provider: ...

    def build_provider(self, choice: Choice, *, tools: bool = True) -> Provider: ...

    def mend_lost_wal(self) -> str | None:
        """A note when the store's -wal file was removed under this process and its content
        was put back (the store is opened again), else None."""
        ...
