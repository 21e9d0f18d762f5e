"""The errors the application layer raises, for front ends to turn into words and exit
statuses: rheo's own (`rheo_cli.errors`: UsageError exit 2, ConfigError and other
RheoErrors exit 1) and the memory engine's, named here so that no front end imports the
engine (`EngineError`: one line fit to show a person; `NotFound` and `InvalidInput`: a wrong
argument, exit 2; `StoreError`: the store cannot be opened, is damaged or busy; `NewerStore`:
written by a newer rheo). A store's own driver errors (`sqlite3.Error`) may also cross:
`database_message` says them in a person's words."""

from __future__ import annotations

from ..memory.store.errors import EngineError, InvalidInput, NewerStore, NotFound, StoreError

__all__ = ["EngineError", "InvalidInput", "NewerStore", "NotFound", "StoreError"]
