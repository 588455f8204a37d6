"""The decorator API: `McpServer` and what its tools, resources and prompts return."""
