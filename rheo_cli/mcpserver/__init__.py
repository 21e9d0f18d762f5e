"""``rheo mcp``: rheo's memory offered to other clients (Claude Code, Claude Desktop) as a
Model Context Protocol server over stdio, for one profile.

`actions` holds what each tool does (plain functions over a Runtime, no SDK); `server` puts
them behind the official ``mcp`` SDK, which only ``rheo mcp`` imports.
"""
