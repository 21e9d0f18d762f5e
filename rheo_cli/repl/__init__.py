"""The interactive REPL (prompt-toolkit): a thin shell over the Assistant."""
