"""A buffered handler that outlives an unreachable secret service at init.

The buffered function reads its secrets (`STRATUS_SECRET_KEY=ssm:...`) when it starts. Under SnapStart that start
is the init Lambda runs when a version is published, and a failed init fails the publication, so the whole stack
(https://docs.aws.amazon.com/lambda/latest/dg/snapstart.html). Inside a VPC without a route to SSM the read cannot
succeed, so the failure it causes is deferred instead: the function starts, and each invocation tries the read
again (at most once per `RETRY_SECONDS`), answering 503 naming the setting until it succeeds. A secret that is
refused (no such parameter, no permission) still stops the start: no later try would fare better.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import Any

from stratus import Settings
from stratus.errors import CIRCUIT_OPEN
from stratus.handlers.adapter import LambdaHandler
from stratus.handlers.secrets import SecretUnavailableError, settings_from_env

logger = logging.getLogger("stratus.lambda")

RETRY_SECONDS = 5.0
"""While a secret cannot be read, invocations closer together than this answer 503 at once rather than each
waiting for another bounded read."""


class ResolvedSettings:
    """`settings_from_env()`, read once: until a read succeeds, each call reads again (a snapshot restore then
    rebuilds the app from what was read before the snapshot, without reading again)."""

    def __init__(self) -> None:
        self.settings: Settings | None = None

    def __call__(self) -> Settings:
        if self.settings is None:
            self.settings = settings_from_env()
        return self.settings


class DeferredStart:
    """The handler of a container whose app could not be built yet, because a secret's service did not answer."""

    def __init__(
        self,
        build: Callable[[], LambdaHandler],
        unavailable: SecretUnavailableError | None = None,
        *,
        retry_seconds: float = RETRY_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._build = build
        self._unavailable = unavailable
        self._retry_seconds = retry_seconds
        self._monotonic = monotonic
        self._next_try = monotonic() + retry_seconds if unavailable else float("-inf")
        self.started: LambdaHandler | None = None

    def __call__(self, event: Any, context: Any) -> Any:
        if self.started is None and self._monotonic() >= self._next_try:
            try:
                self.started = self._build()
            except SecretUnavailableError as error:
                self._unavailable = error
                self._next_try = self._monotonic() + self._retry_seconds
                logger.warning("a secret is still unreachable", extra={"setting": error.setting})
        if self.started is None:
            return unavailable_answer(self._unavailable)
        return self.started(event, context)


def unavailable_answer(error: SecretUnavailableError | None) -> dict[str, Any]:
    """503, naming the setting whose reference could not be read (its value, a parameter name, stays in the
    function's configuration)."""
    setting = error.setting if error is not None and error.setting else "a secret setting"
    message = (
        f"Service Unavailable: this function cannot read {setting} yet (its secret's service did not answer); "
        "in a VPC, give the function a route to SSM / Secrets Manager (a VPC endpoint or a NAT gateway)"
    )
    body = {"jsonrpc": "2.0", "error": {"code": CIRCUIT_OPEN, "message": message}}
    return {
        "statusCode": 503,
        "headers": {"content-type": "application/json", "retry-after": str(int(RETRY_SECONDS))},
        "body": json.dumps(body),
    }


def start_or_defer(build: Callable[[], LambdaHandler]) -> LambdaHandler:
    """`build()`, or a `DeferredStart` retrying it when a secret's service does not answer now.

    Raises:
        SettingsError: a secret is refused, or a setting is malformed.
    """
    try:
        return build()
    except SecretUnavailableError as error:
        logger.warning("a secret is unreachable; starting without it", extra={"setting": error.setting})
        return DeferredStart(build, error)
