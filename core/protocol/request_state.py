"""`requestState` for 2026-07-28 multi round-trip requests: what the server remembers between rounds, sealed.

The payload (the answers so far, the principal, an expiry, a digest of the original request and a one-time nonce)
is signed with HMAC-SHA256 under the deployment's shared key, so any container can check it and no client can
forge or edit it. The client can read it; nothing in it is secret from the client that supplied the answers.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from collections.abc import Callable
from typing import Any

from stratus.errors import InvalidParamsError

STATE_TTL_SECONDS = 600.0
_TAG_BYTES = 16
# Params that change between rounds and so are not part of what the state is bound to.
_ROUND_PARAMS = ("_meta", "inputResponses", "requestState")


class RequestStateError(InvalidParamsError):
    """The requestState is forged, edited, expired, replayed, or belongs to another principal or request."""

    def __init__(self) -> None:
        super().__init__("Invalid params: requestState is not valid for this request")


def request_digest(method: str, params: dict[str, Any]) -> str:
    """A digest of what the request asks (its method and params, less the per-round fields)."""
    salient = {key: value for key, value in params.items() if key not in _ROUND_PARAMS}
    canonical = json.dumps([method, salient], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


class StateSealer:
    """Seals and opens request states with one key (every container of a deployment holds the same one)."""

    def __init__(self, key: bytes, *, clock: Callable[[], float]) -> None:
        self._key = hashlib.sha256(b"stratus-request-state:" + key).digest()
        self._clock = clock

    def seal(self, answers: dict[str, Any], *, principal: str | None, digest: str) -> tuple[str, str]:
        """The sealed state, and its nonce (to be claimed once when the state comes back)."""
        nonce = secrets.token_urlsafe(12)
        payload = {"a": answers, "p": principal, "d": digest, "e": self._clock() + STATE_TTL_SECONDS, "n": nonce}
        body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
        tag = hmac.new(self._key, body, hashlib.sha256).digest()[:_TAG_BYTES]
        return base64.urlsafe_b64encode(tag + body).decode().rstrip("="), nonce

    def open(self, state: object, *, principal: str | None, digest: str) -> tuple[dict[str, Any], str]:
        """The answers a state carries and its nonce.

        Raises:
            RequestStateError: anything about the state is wrong.
        """
        if not isinstance(state, str) or len(state) > 1_000_000:
            raise RequestStateError
        try:
            raw = base64.urlsafe_b64decode(state + "=" * (-len(state) % 4))
            tag, body = raw[:_TAG_BYTES], raw[_TAG_BYTES:]
            if not hmac.compare_digest(tag, hmac.new(self._key, body, hashlib.sha256).digest()[:_TAG_BYTES]):
                raise ValueError("bad tag")
            payload = json.loads(body)
        except (ValueError, TypeError):
            raise RequestStateError from None
        if payload.get("p") != principal or payload.get("d") != digest or payload.get("e", 0) <= self._clock():
            raise RequestStateError
        answers, nonce = payload.get("a"), payload.get("n")
        if not isinstance(answers, dict) or not isinstance(nonce, str):
            raise RequestStateError
        return answers, nonce
