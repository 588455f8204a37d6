"""HTTP: the Starlette app, the MCP endpoint and the checks made before a body is read."""
