"""Everything of rheo's store that goes out or comes in, as plain records.

The public names here work on both stores and include the knowledge base (`exchange`):
`snapshot` and `export_records` read a profile's records from one consistent state,
`import_records` writes them back in one transaction, adding only what is missing (recognised
by content, `keys`) and leaving out what a purge erased (`tombstones`); `import_history`
writes other programs' chat history into the ledger the same way (`history`). A backup is
the store's own (`store.api.Store.backup`). The profile-level pieces are `export` and
`importing`. Reading and writing files is not here: `rheo_cli.transfer` turns files into these
records and back.
"""

from .exchange import KINDS, export_records, import_records, snapshot
from .export import profiles
from .history import Conversation, Message, Parsed, Summary, import_history
from .importing import ImportCounts
from .keys import FORMAT, VERSION, version_for
from .tombstones import purged_keys

__all__ = [
    "FORMAT",
    "KINDS",
    "VERSION",
    "Conversation",
    "ImportCounts",
    "Message",
    "Parsed",
    "Summary",
    "export_records",
    "import_history",
    "import_records",
    "profiles",
    "purged_keys",
    "snapshot",
    "version_for",
]
