"""Versioned schema migrations, applied in order when the store is opened (being split into
modules: the steps and the runner are still in `v001_003`)."""

from .v001_003 import (
    CJK_GLOB,
    MIGRATIONS,
    SCHEMA_VERSION,
    migrate,
    refuse_newer,
    schema_version,
)

__all__ = ["CJK_GLOB", "MIGRATIONS", "SCHEMA_VERSION", "migrate", "refuse_newer", "schema_version"]
