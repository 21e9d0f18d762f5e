"""The ``rheo`` command line (typer): thin shells that parse, make one call, and render."""
