"""``rheo mcp``: rheo's memory offered to other clients (Claude Code, Claude Desktop) as a
Model Context Protocol server over stdio, for one profile.

`server` puts rheo's memory tools (`rheo_cli.app.tools`: what each tool does, plain
functions over an App, no SDK) behind the official ``mcp`` SDK, which only ``rheo mcp``
imports.
"""
