"""A start that outlives an unreachable secret service: the buffered handler, and the streaming function's app.

Both functions read their secrets (`STRATUS_SECRET_KEY=ssm:...`) when they start. Inside a VPC without a route to
SSM the read cannot succeed, and a start that failed on it would fail every cold start: under SnapStart the buffered
function's init runs when a version is published, and a failed init fails the publication, so the whole stack
(https://docs.aws.amazon.com/lambda/latest/dg/snapstart.html); the streaming function's process would exit before
the Web Adapter's readiness check (`/health/live`) ever answered. So the failure is deferred instead: the function
starts, and each request tries the read again (at most once per `RETRY_SECONDS`), answering 503 naming the setting
until it succeeds. The streaming function's `/health/live` answers meanwhile: it says the process answers, nothing
more. A secret that is refused (no such parameter, no permission) still stops the start: no later try would fare
better. A read SSM throttles is tried again within the start's patience (`stratus.handlers.secrets.Patience`); one
still throttled then is deferred the same way. An AuthAudience not given yet (jwt and front modes: the documented
first deploy has no URL to give it) is deferred for good: the function starts and answers 503 naming AuthAudience
until a deploy sets it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from stratus import Settings
from stratus.errors import CIRCUIT_OPEN
from stratus.handlers.secrets import SecretUnavailableError, settings_from_env
from stratus.settings import AudienceUnsetError
from stratus.transport.asgi import Router, route_path, send_response
from stratus.transport.health import LIVE_PATH, live
from stratus.types import Receive, Scope, Send

if TYPE_CHECKING:
    from stratus.handlers.adapter import LambdaHandler

logger = logging.getLogger("stratus.lambda")

RETRY_SECONDS = 5.0
"""While a secret cannot be read, requests closer together than this answer 503 at once rather than each waiting
for another bounded read."""


class ResolvedSettings:
    """`settings_from_env()`: each secret is read once per container (`stratus.handlers.secrets` keeps what it
    read), so a build after the first reads nothing, unless the secrets were forgotten (a snapshot restore forgets
    them, and its rebuild reads them again). `settings`: the last settings built."""

    def __init__(self) -> None:
        self.settings: Settings | None = None

    def __call__(self) -> Settings:
        self.settings = settings_from_env()
        return self.settings


class Retries:
    """When a start deferred for want of a secret tries again, and what it answers until then: a start that failed
    waits `retry_seconds` before its next try; one that has not tried yet tries at once."""

    def __init__(
        self,
        unavailable: SecretUnavailableError | None = None,
        *,
        retry_seconds: float = RETRY_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.unavailable = unavailable
        self._retry_seconds = retry_seconds
        self._monotonic = monotonic
        self._next_try = monotonic() + retry_seconds if unavailable else float("-inf")

    def due(self) -> bool:
        return self._monotonic() >= self._next_try

    def failed(self, error: SecretUnavailableError) -> None:
        self.unavailable = error
        self._next_try = self._monotonic() + self._retry_seconds
        logger.warning("a secret is still unreachable", extra=_logged(error))

    def answer(self) -> tuple[int, dict[str, str], bytes]:
        """The 503 naming the setting whose reference could not be read (its value, a parameter name, stays in the
        function's configuration and its logs)."""
        error = self.unavailable
        setting = error.setting if error is not None and error.setting else "a secret setting"
        if error is not None and error.throttled:
            message = (
                f"Service Unavailable: this function cannot read {setting} yet (its secret's service throttled or "
                "failed the read); try again shortly"
            )
        elif os.environ.get("AWS_SAM_LOCAL") == "true":  # stratus local (or sam local): no SSM to read it from
            message = (
                f"Service Unavailable: this function cannot read {setting} (its secret's service did not answer): "
                f"locally, set {setting} to the value itself in the shell that runs stratus local, which passes it "
                'to every function over the template\'s reference (docs/deploy.md, "Sign-in locally")'
            )
        else:
            message = (
                f"Service Unavailable: this function cannot read {setting} yet (its secret's service did not "
                "answer); in a VPC, give the function a route to SSM / Secrets Manager (a VPC endpoint or a NAT "
                "gateway)"
            )
        body = {"jsonrpc": "2.0", "error": {"code": CIRCUIT_OPEN, "message": message}}
        headers = {"content-type": "application/json", "retry-after": str(int(RETRY_SECONDS))}
        return 503, headers, json.dumps(body).encode()


def audience_answer(error: AudienceUnsetError) -> tuple[int, dict[str, str], bytes]:
    """The 503 of a function whose AuthAudience (STRATUS_AUTH_AUDIENCE) is unset or refused: a deploy setting it
    (the URL its clients use) starts it."""
    message = (
        "Service Unavailable: this server's sign-in is not configured yet: set the stack parameter AuthAudience "
        f"(STRATUS_AUTH_AUDIENCE) to the URL its clients use, and deploy again ({'; '.join(error.problems)})"
    )
    body = {"jsonrpc": "2.0", "error": {"code": CIRCUIT_OPEN, "message": message}}
    return 503, {"content-type": "application/json"}, json.dumps(body).encode()


class AwaitingAudience:
    """The buffered handler of a function whose AuthAudience is not given: every request is answered 503 naming
    it (a container's environment never changes, so nothing is tried again)."""

    def __init__(self, error: AudienceUnsetError) -> None:
        self._error = error

    def __call__(self, event: Any, context: Any) -> Any:
        status, headers, body = audience_answer(self._error)
        return {"statusCode": status, "headers": headers, "body": body.decode()}


class AwaitingAudienceApp:
    """The streaming function's app while its AuthAudience is not given: `/health/live` answers (the Web Adapter
    waits for it), every other request is answered 503 naming it."""

    def __init__(self, error: AudienceUnsetError) -> None:
        self._error = error
        self._waiting = Router({})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._waiting(scope, receive, send)  # the lifespan
        elif route_path(scope).rstrip("/") == LIVE_PATH:
            await live(scope, receive, send)
        else:
            status, headers, body = audience_answer(self._error)
            await send_response(send, status, body, headers)

    async def shutdown(self) -> None:
        """Nothing was built."""


class DeferredStart:
    """The buffered handler of a container whose app could not be built yet, because a secret's service did not
    answer."""

    def __init__(
        self,
        build: Callable[[], LambdaHandler],
        unavailable: SecretUnavailableError | None = None,
        *,
        retry_seconds: float = RETRY_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._build = build
        self._retries = Retries(unavailable, retry_seconds=retry_seconds, monotonic=monotonic)
        self.started: LambdaHandler | None = None

    def __call__(self, event: Any, context: Any) -> Any:
        if self.started is None and self._retries.due():
            try:
                self.started = self._build()
            except SecretUnavailableError as error:
                self._retries.failed(error)
            except AudienceUnsetError as error:
                self.started = AwaitingAudience(error)
        if self.started is None:
            status, headers, body = self._retries.answer()
            return {"statusCode": status, "headers": headers, "body": body.decode()}
        return self.started(event, context)


class DeferredApp:
    """The streaming function's app while it could not be built, because a secret's service did not answer:
    `/health/live` answers, and every other request tries the build when one is due (in a worker thread: the read
    blocks for seconds, and the readiness check is answered meanwhile), then is served by the app, or answered 503.
    Its lifespan's shutdown shuts the app down, once there is one."""

    def __init__(
        self,
        build: Callable[[], Router],
        unavailable: SecretUnavailableError | None = None,
        *,
        retry_seconds: float = RETRY_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._build = build
        self._retries = Retries(unavailable, retry_seconds=retry_seconds, monotonic=monotonic)
        self._trying = asyncio.Lock()
        self._waiting = Router({}, on_shutdown=self.shutdown)
        self.started: Router | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._waiting(scope, receive, send)  # the lifespan
            return
        readiness = route_path(scope).rstrip("/") == LIVE_PATH
        if self.started is None and not readiness:
            await self._try()
        if self.started is not None:
            await self.started(scope, receive, send)
        elif readiness:
            await live(scope, receive, send)
        else:
            status, headers, body = self._retries.answer()
            await send_response(send, status, body, headers)

    async def _try(self) -> None:
        async with self._trying:  # one read at a time; a request that waited for it sees its outcome
            if self.started is not None or not self._retries.due():
                return
            try:
                self.started = await asyncio.to_thread(self._build)
            except SecretUnavailableError as error:
                self._retries.failed(error)

    async def shutdown(self) -> None:
        """Release what the app holds, if it was built."""
        if self.started is not None:
            await self.started.shutdown()


def start_or_defer(build: Callable[[], LambdaHandler]) -> LambdaHandler:
    """`build()`, or a `DeferredStart` retrying it when a secret's service does not answer now, or an
    `AwaitingAudience` when AuthAudience is not given.

    Raises:
        SettingsError: a secret is refused, or a setting is malformed.
    """
    try:
        return build()
    except SecretUnavailableError as error:
        logger.warning("a secret is unreachable; starting without it", extra=_logged(error))
        return DeferredStart(build, error)
    except AudienceUnsetError as error:
        logger.warning("AuthAudience is not set; answering 503 until a deploy sets it", extra=_audience(error))
        return AwaitingAudience(error)


def start_or_defer_app(
    build: Callable[[], Router], *, monotonic: Callable[[], float] = time.monotonic
) -> Router | DeferredApp | AwaitingAudienceApp:
    """`build()`, or a `DeferredApp` retrying it when a secret's service does not answer now (`monotonic`: the
    retries' clock), or an `AwaitingAudienceApp` when AuthAudience is not given.

    Raises:
        SettingsError: a secret is refused, or a setting is malformed.
    """
    try:
        return build()
    except SecretUnavailableError as error:
        logger.warning("a secret is unreachable; starting without it", extra=_logged(error))
        return DeferredApp(build, error, monotonic=monotonic)
    except AudienceUnsetError as error:
        logger.warning("AuthAudience is not set; answering 503 until a deploy sets it", extra=_audience(error))
        return AwaitingAudienceApp(error)


def _logged(error: SecretUnavailableError) -> dict[str, str]:
    # The reason names the setting, its reference (`ssm:/name`, not the secret) and the error's type.
    return {"setting": error.setting, "reason": str(error)}


def _audience(error: AudienceUnsetError) -> dict[str, str]:
    return {"setting": "AuthAudience (STRATUS_AUTH_AUDIENCE)", "reason": str(error)}
