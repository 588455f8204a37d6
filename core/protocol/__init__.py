"""JSON-RPC, protocol versions of both eras, and dispatch of methods to the server's handlers."""
