"""The knowledge base (Solid# article, "Memory vs. Knowledge Base", Layer 3.5): documents the
person adds, cut into chunks by heading and size, searched with FTS5 and injected after memory
under KNOWLEDGE. No decay; a changed file becomes a new version, never a silent overwrite."""
