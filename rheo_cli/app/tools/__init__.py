"""rheo's memory tools: one tool set — one schema, one check, one output per tool — offered
to the model in rheo's chat (`chat`) and to MCP clients (``rheo mcp``, `rheo_cli.mcpserver`).

`specs`: each tool's name, description, argument schema and effect, and which front end
offers it (light: no engine import). `caller`: who calls (the chat's model answering a
stored turn, or an MCP client). `actions`: what each tool does, and `actions.call`, the one
way in. `chat`: the tools wired into the chat's tool loop.
"""
