"""The knowledge base for a person: documents they add (Markdown, text), cut into chunks,
searched, and injected under KNOWLEDGE when a message matches; versioned when a file changes,
never decaying.

Every function takes the `App` first and works on its profile. A document is named by its
``source`` (for a file, its absolute path) or its id (``12`` or ``#12``). Documents, chunks
and passages are the engine's dataclasses (`Document`, `Chunk`, `Passage`); times are stored
UTC text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..memory.kb import documents as kb_documents
from ..memory.kb import search as kb_search
from ..memory.kb.chunking import Chunk
from ..memory.kb.documents import Added, Document
from ..memory.kb.search import Passage

if TYPE_CHECKING:
    from .app import App

__all__ = ["Added", "Chunk", "Document", "Passage", "add", "documents", "remove", "search", "show"]


def add(app: App, source: str, text: str, *, markdown: bool) -> Added:
    """Add ``text`` as document ``source``, or a new version of it when its text changed (the
    old version is kept, marked replaced). ``markdown``: cut at headings first, then by size.
    Returns `Added` (``action``: added, replaced or unchanged; ``document``; ``previous``).
    Raises InvalidInput for an empty source or text, NUL characters or a text over the
    engine's size limit (5 million characters)."""
    return kb_documents.add_document(
        app.conn, app.profile, source, text, app.now(), markdown=markdown
    )


def documents(app: App, *, all_versions: bool = False) -> list[Document]:
    """The active documents by source; ``all_versions``: every version, replaced and removed
    ones too, newest version first within a source."""
    return kb_documents.list_documents(app.conn, app.profile, all_versions=all_versions)


def show(app: App, ref: str) -> tuple[Document, list[Chunk]]:
    """The active document ``ref`` names (an id: that version, whatever its state) and its
    chunks in order, as they are searched and injected. Raises NotFound."""
    found = kb_documents.find_document(app.conn, app.profile, ref)
    return found, kb_documents.document_chunks(app.conn, app.profile, found.id)


def search(app: App, query: str, *, limit: int = 10) -> list[Passage]:
    """Chunks of the active documents holding any word of ``query``, best first (bm25, the
    heading weighted twice the body), at most ``limit``."""
    return kb_search.search_chunks(app.conn, app.profile, query, limit=limit)


def remove(app: App, ref: str) -> Document:
    """Stop using the document ``ref`` names: kept, marked removed, no longer searched or
    injected. Returns it as it is now. Raises NotFound, or InvalidInput when that version is
    not active."""
    found = kb_documents.find_document(app.conn, app.profile, ref)
    return kb_documents.remove_document(app.conn, app.profile, found.id, app.now())
