"""rheo's memory tools: one tool set, offered to the model in a chat (`chat`) and to MCP
clients (``rheo mcp``).

`actions` holds what each tool does (plain functions over a Runtime, no SDK); `caller` who
calls them.
"""
