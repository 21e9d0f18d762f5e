"""The ledger (Rheo article, layer 0): turns, append-only with FTS5 search; sessions; digests."""
