"""Who is calling: bearer JWTs checked against a JWKS (OAuth 2.1 resource server), or an API Gateway authorizer."""
