"""The authorization front's HTTP endpoints (STRATUS_AUTH_MODE=front): an OAuth 2.1 authorization server for this one
MCP resource that signs users in at an upstream OpenID provider knowing one fixed client (Amazon Cognito, or any OIDC
provider), for hosts that register themselves (RFC 7591) or name a client ID metadata document.

Served by the transport's router beside the MCP endpoint (`routes.front_routes`). What the resource server needs to
verify the front's tokens, its configuration and key, is `stratus.auth.front_config` and `stratus.auth.front_key`,
at the resource server's layer (docs/architecture.md); docs/deploy.md sets the front up."""
