"""Backups, and rheo's own export records (being split into modules: all of it is still in
`importing`)."""

from .importing import (
    FORMAT,
    KINDS,
    VERSION,
    ImportCounts,
    backup,
    export_records,
    header,
    import_records,
    profiles,
    snapshot,
)

__all__ = [
    "FORMAT",
    "KINDS",
    "VERSION",
    "ImportCounts",
    "backup",
    "export_records",
    "header",
    "import_records",
    "profiles",
    "snapshot",
]
