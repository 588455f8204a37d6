"""The authorization front: an OAuth 2.1 authorization server for this one MCP resource that signs users in at an
upstream OpenID provider knowing one fixed client (Amazon Cognito, or any OIDC provider), for hosts that register
themselves (RFC 7591) or name a client ID metadata document. docs/architecture.md, "Authorization front"."""
