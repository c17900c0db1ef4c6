"""`cems mcp`: CEMS as a Model Context Protocol server (stdio) for coding agents.

- tools.py: the tools: JSON schemas, descriptions, and what each does through MemoryService (no MCP SDK);
- server.py: the SDK wiring: argument checks, errors as tool errors, one call at a time off the event loop;
- register.py: the `mcpServers` entry `cems hooks install --mcp` writes into Claude Code's files.

Importing this package is cheap: the SDK, the database and the model are loaded only when used.
"""
