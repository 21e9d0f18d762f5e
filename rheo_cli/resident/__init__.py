"""The resident rheo: one warm process per RHEO_HOME that answers ``rheo ask`` and
``rheo mcp`` without paying for Python's imports again, and does the memory work between
messages (extraction after a reply, a session's digest when it closes).

This package is the thin side, standard library only and importing nothing else of rheo, so
any layer may use it: `protocol` (where the socket lives, the messages, the build stamp),
`client` (the ``rheo`` command handing its command, or its memory work, to the resident),
`launch` (starting one) and `control` (``rheo resident status|stop``). The warm side — the
listening loop, the request processes and the memory work — is `warm`, which imports the
rest of rheo.
"""
