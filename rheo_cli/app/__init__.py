"""The application layer every front end calls: what rheo does for a person, independent of
how it is asked (the REPL, ``rheo ask``, Telegram, an MCP client). Front ends parse their
input, call this layer and render what it returns; it alone reaches the turn runner, the
memory engine, the providers and the background worker below it. Its modules import nothing
heavy at package level, so ``rheo mcp`` can name the tools before the engine is loaded.
"""
