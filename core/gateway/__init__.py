"""Gateway mode: Stratus in front of upstream MCP servers (configuration first; the client and pool follow)."""
