"""The resident rheo: one warm process per RHEO_HOME that answers ``rheo ask`` and
``rheo mcp`` without paying for Python's imports again, and does the memory work between
messages (extraction after a reply, a session's digest when it closes).

`protocol` (where the socket lives, the messages, the build stamp) and `client` / `launch`
(the thin side in the ``rheo`` command) import only the standard library; `server` (the
listening loop), `child` (one request, forked from the warm server) and `background` (the
work after a reply) import the rest of rheo.
"""
