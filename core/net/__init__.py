"""The network code the gateway, the authorization front and the emulator share: the address guard against
server-side request forgery and the HTTP/1.1 client. A leaf: it imports nothing of ours but other leaves."""
