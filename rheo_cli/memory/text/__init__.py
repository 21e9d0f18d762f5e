"""Text helpers shared by the engine: FTS5 quoting, words (stop words, CJK, folding, stemming),
language guesses, token estimates and safe rendering of stored text."""
