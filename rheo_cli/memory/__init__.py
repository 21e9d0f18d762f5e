"""rheo's memory engine: the ledger, sessions, memory items, digests and context assembly.

Standard library only (sqlite3, json, dataclasses). Nothing here imports the CLI, the REPL or a
model provider, and every SQL statement rheo runs lives in this package. Callers pass the clock
(`now`, an aware datetime) and the profile explicitly; the engine never reads the environment.
"""
