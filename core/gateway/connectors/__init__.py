"""How the gateway reaches an upstream: the transport contract, then one module per wire (Streamable HTTP, the
2024-11-05 HTTP+SSE transport, stdio, WebSocket) and the body readers they share; the HTTP/1.1 client they run on
is core/net/http11.py."""
