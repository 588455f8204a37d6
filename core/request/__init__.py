"""What one request carries through every layer: its HTTP request, cancellation signal, response stream and
the answers of a multi round-trip round. A leaf: the transport, the protocol, the pipeline and the server import
it, and it imports none of them."""
