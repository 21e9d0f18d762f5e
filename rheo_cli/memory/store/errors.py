"""Exceptions raised by the memory engine."""

from __future__ import annotations


class EngineError(Exception):
    """Base class for engine errors; the message is one line, fit to show a person."""


class StoreError(EngineError):
    """The database cannot be opened, is from a newer rheo, or is damaged."""


class NewerStore(StoreError):
    """The database was written by a newer rheo (a higher schema version): left untouched."""


class NotFound(EngineError):
    """A turn, session, memory item or digest id does not exist in this profile."""


class InvalidInput(EngineError):
    """An argument is malformed (bad profile name, empty text, unknown category...)."""
