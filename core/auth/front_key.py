"""The key the front signs access tokens with: a P-256 key derived from `STRATUS_SECRET_KEY`, so that every
container holds the same key without storing another secret, and rotating that secret rotates it.

The derivation (HKDF) has no work factor and the public half is published at /oauth/jwks, so the secret must be
unguessable: settings refuse one that is not at least 32 random bytes in front mode (core/setting_values.py's
`strong_secret`). With that, a signing secret of the front's own would add a parameter to keep and nothing to guess.

A token signed with the previous key is refused once the secret changes; the client then refreshes (refresh
grants are store records, not signed), so a rotation costs each client one extra round trip (docs/deploy.md).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from functools import cache
from typing import Any

from stratus.types import JsonObject

ALGORITHM = "ES256"
_DERIVATION = b"stratus authorization front: token signing key v1"


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class SigningKey:
    """Signs the front's access tokens and publishes the public half as a JWKS."""

    def __init__(self, secret: bytes | None) -> None:
        import jwt
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF

        self._jwt = jwt
        seed = secret if secret else secrets.token_bytes(32)  # no shared secret: one process, one key
        material = HKDF(algorithm=hashes.SHA256(), length=48, salt=None, info=_DERIVATION).derive(seed)
        order = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551  # the order of P-256's group
        self._private = ec.derive_private_key(int.from_bytes(material, "big") % (order - 1) + 1, ec.SECP256R1())
        numbers = self._private.public_key().public_numbers()
        self.public_jwk: JsonObject = {
            "kty": "EC",
            "crv": "P-256",
            "x": _b64url(numbers.x.to_bytes(32, "big")),
            "y": _b64url(numbers.y.to_bytes(32, "big")),
        }
        # RFC 7638: the thumbprint of the required members, in lexical order, with no white space.
        canonical = json.dumps(self.public_jwk, sort_keys=True, separators=(",", ":")).encode()
        self.kid = _b64url(hashlib.sha256(canonical).digest())
        self.public_jwk.update({"kid": self.kid, "use": "sig", "alg": ALGORITHM})

    def jwks(self) -> JsonObject:
        return {"keys": [self.public_jwk]}

    def sign(self, claims: dict[str, Any]) -> str:
        token: str = self._jwt.encode(
            claims, self._private, algorithm=ALGORITHM, headers={"kid": self.kid, "typ": "at+jwt"}
        )
        return token

    def verified(self, token: str, *, issuer: str, audience: str) -> dict[str, Any] | None:
        """The claims of a token this key signed for `audience`, expired or not; None for any other token."""
        try:
            claims: dict[str, Any] = self._jwt.decode(
                token,
                self._private.public_key(),
                algorithms=[ALGORITHM],
                audience=audience,
                issuer=issuer,
                options={"verify_exp": False},
            )
        except self._jwt.PyJWTError:
            return None
        return claims


@cache
def signing_key(secret: str | None) -> SigningKey:
    """The one key of this process for `secret` (the resource server and the token endpoint share it)."""
    return SigningKey(secret.encode() if secret else None)
