"""Backups, and rheo's own export records: everything of a profile as plain dicts, and back.

`backup.backup` copies the live store; `export.export_records` yields a profile's records,
each referring to others by the stable keys of `keys`; `importing.import_records` writes them
back in one transaction, adding only what is missing and leaving out what a purge erased
(`tombstones`). The package exports their public names.
"""

from .backup import backup
from .export import export_records, has_assistant_items, header, profiles, snapshot
from .importing import ImportCounts, import_records
from .keys import FORMAT, KINDS, VERSION
from .tombstones import purged_keys

__all__ = [
    "FORMAT",
    "KINDS",
    "VERSION",
    "ImportCounts",
    "backup",
    "export_records",
    "has_assistant_items",
    "header",
    "import_records",
    "profiles",
    "purged_keys",
    "snapshot",
]
