"""Team logins on a shared store: which members' database logins may act for which profiles
(``rheo team grant|revoke|list``). Each member connects with their own login; row-level
security then shows them only the profiles granted to them. Only the owner of rheo's tables
grants and revokes. A store without logins of its own (the SQLite file) refuses in one line.

Each function opens the App's store for no profile (the grants are its only business: a
member may list its grants without being granted the App's profile) and closes it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from .. import extras
from ..errors import ConfigError
from ..memory import store as store_mod
from ..memory.store.api import NO_LOGINS, Grant, Logins, Store
from ..memory.store.errors import InvalidInput

if TYPE_CHECKING:
    from .app import App

__all__ = ["Grant", "Logins", "grant", "logins", "revoke"]

T = TypeVar("T")


@contextmanager
def _unbound(app: App) -> Iterator[Store]:
    """The App's store opened for no profile (not migrated), closed afterwards."""
    opened = store_mod.open(app.store_location, tenant="", migrate_schema=False)
    try:
        yield opened
    finally:
        opened.close()


def _with_store(app: App, call: Callable[[Store], T]) -> T:
    """``call`` on the App's store opened for no profile; ConfigError without its driver,
    InvalidInput (nothing opened or created) for a store without logins of its own."""
    chosen = app.store_class
    if not chosen.has_logins:
        raise InvalidInput(NO_LOGINS)
    if chosen.extra is not None and extras.missing(chosen.extra):
        raise ConfigError(f"{chosen.extra_for}: {extras.install_hint(chosen.extra)}")
    with _unbound(app) as opened:
        return call(opened)


def grant(app: App, member: str, profile: str) -> bool:
    """Let the login role ``member`` act for ``profile``; False when it already could.
    Raises InvalidInput (a store without logins, a login that is not the owner, a bad
    profile name), NotFound (no such role), StoreError (the store cannot be reached)."""
    now = app.now()
    return _with_store(app, lambda s: s.grant(member, profile, now=now))


def revoke(app: App, member: str, profile: str) -> bool:
    """Take ``profile`` back from ``member``; False when it had no such grant. Raises as
    `grant` does."""
    return _with_store(app, lambda s: s.revoke(member, profile))


def logins(app: App) -> Logins:
    """The login, the owner of rheo's tables and the grants this login may see. Raises
    InvalidInput on a store without logins, StoreError when it cannot be reached."""
    return _with_store(app, lambda s: s.logins())
