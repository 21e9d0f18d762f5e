"""What the CLI and the REPL share: the streaming reply renderer, safe output, signals."""
