"""`helix mcp`: the store's memory and history as MCP tools (see server.py)."""
