"""Secrets named by reference in settings, read once per container.

`STRATUS_SECRET_KEY` (the key every container signs cursors and request state with, and the authorization front
its tokens), `STRATUS_STORE` (a Redis URL may carry a password) and `STRATUS_AUTH_UPSTREAM_CLIENT_SECRET` may be
the value itself, or `ssm:<parameter name>` (an SSM SecureString, decrypted) or `secretsmanager:<secret id or ARN>`.
boto3 is imported only when a reference is used. A secret read is kept for the container's life (`forget_secrets`
drops them: a restored SnapStart snapshot reads again), so a warm invocation never calls SSM.

A read is bounded in time: inside a VPC without a route to SSM (no VPC endpoint, no NAT gateway) botocore would
otherwise wait 60 s per connection attempt, over several attempts, past Lambda's 10 s on-demand init
(https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html). A throttled read (Parameter Store
allows 40 GetParameter calls a second per account and Region by default, shared by every caller:
https://docs.aws.amazon.com/general/latest/gr/ssm.html#limits_ssm) is tried again after a pause with full jitter,
until `Patience`'s deadline. A service that does not answer in time, or still throttles at the deadline, raises
`SecretUnavailableError`, which a handler may outlive (`handlers/deferred.py`); a refusal (no such parameter, no
permission) raises the plain `SettingsError`, naming the setting.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from stratus import Settings
from stratus.settings import PREFIX, SECRET_FIELDS, SettingsError

SECRET_SETTINGS = tuple(f"{PREFIX}{name.upper()}" for name in SECRET_FIELDS)

SSM_PREFIX = "ssm:"
SECRETS_MANAGER_PREFIX = "secretsmanager:"
CONNECT_TIMEOUT_SECONDS = 2
READ_TIMEOUT_SECONDS = 2
ATTEMPTS = 2
"""A service that does not answer is tried at most twice, each of 2 s to connect and 2 s to answer (about 8 s at
worst, 4 s to an address that never answers the connection)."""
THROTTLES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "ProvisionedThroughputExceededException",
        "TransactionInProgressException",
        "RequestLimitExceeded",
        "BandwidthLimitExceeded",
        "LimitExceededException",
        "RequestThrottled",
        "SlowDown",
        "PriorRequestNotComplete",
        "EC2ThrottledException",
    }
)
"""The error codes that say "try again later": SSM's `ThrottlingException`, and those Secrets Manager lists as its
throttling and limit errors
(https://docs.aws.amazon.com/secretsmanager/latest/userguide/reference_limits.html#quotas_throttling)."""
FIRST_PAUSE_SECONDS = 0.1
LONGEST_PAUSE_SECONDS = 2.0
INIT_PATIENCE_SECONDS = 3.0
"""How long a start waits out throttling: init has 10 s in all, shared with imports and the app's build."""
INVOCATION_PATIENCE_SECONDS = 30.0
"""How long an invocation that reads secrets (the task worker's, the sweeper's) waits out throttling, at most."""

_read: dict[str, str] = {}


class Patience:
    """How long reads may wait out throttling (`seconds` from the first read) and how they wait: before retry `n`,
    a pause of `random() * min(LONGEST_PAUSE_SECONDS, FIRST_PAUSE_SECONDS * 2**n)` (full jitter), never past the
    deadline."""

    # A plain class, not a dataclass: every cold start imports this module, and a dataclass costs about 4 M
    # instructions to build (docs/benchmarks.md).
    __slots__ = ("monotonic", "random", "seconds", "sleep")

    def __init__(
        self,
        seconds: float = INIT_PATIENCE_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
        random: Callable[[], float] = random.random,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.seconds = seconds
        self.sleep = sleep
        self.random = random
        self.monotonic = monotonic

    def pause(self, retry: int, deadline: float) -> float | None:
        """The pause before retry `retry` (0 first), or None when it would end past `deadline`."""
        pause = self.random() * min(LONGEST_PAUSE_SECONDS, FIRST_PAUSE_SECONDS * 2**retry)
        return None if self.monotonic() + pause > deadline else pause


def patience_within(context: Any, longest: float, *, reserve: float = 1.0) -> Patience:
    """A `Patience` of at most `longest` seconds, ending `reserve` seconds before the invocation of `context` (a
    Lambda context: `get_remaining_time_in_millis()`) does."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    seconds = longest if remaining is None else min(longest, remaining() / 1000 - reserve)
    return Patience(seconds=max(0.0, seconds))


class SecretUnavailableError(SettingsError):
    """The service holding a secret did not answer in time (no route to it, or it timed out), or throttled (or
    failed with a 5xx) every read until the deadline (`throttled`): a later read may succeed. `setting` names the
    variable whose reference could not be read, when it is known."""

    def __init__(self, message: str, setting: str = "", *, throttled: bool = False) -> None:
        super().__init__(message)
        self.setting = setting
        self.throttled = throttled


def forget_secrets() -> None:
    """Drop every secret read so far: the next read of each asks its service again."""
    _read.clear()


def resolve_secret(
    value: str,
    setting: str = "",
    *,
    patience: Patience | None = None,
    deadline: float | None = None,
    client: Any = None,
) -> str:
    """The secret a reference names (read once per container), or `value` itself when it is no reference.

    Args:
        value: the setting's value.
        setting: the variable it is the value of, named in the errors.
        patience: how long and how to wait out throttling (default: a start's).
        deadline: when waiting ends (`patience.monotonic()`'s clock; default: `patience.seconds` from now).
        client: the boto3 client to read with (default: one made for the reference's service).

    Raises:
        SecretUnavailableError: the service did not answer, or throttled every read until the deadline.
        SettingsError: the reference cannot be read (missing, no permission, empty).
    """
    if not value.startswith((SSM_PREFIX, SECRETS_MANAGER_PREFIX)):
        return value
    if value in _read:
        return _read[value]
    patience = patience or Patience()
    deadline = patience.monotonic() + patience.seconds if deadline is None else deadline
    secret = _read_secret(value, setting, patience, deadline, client or _client(value))
    _read[value] = secret
    return secret


def _client(value: str) -> Any:
    import boto3
    from botocore.config import Config

    # One attempt per call: retries are this module's (their pauses injectable, their sum bounded by the deadline).
    bounded = Config(
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
        retries={"mode": "standard", "total_max_attempts": 1},
    )
    return boto3.client("ssm" if value.startswith(SSM_PREFIX) else "secretsmanager", config=bounded)


def _read_secret(value: str, setting: str, patience: Patience, deadline: float, client: Any) -> str:
    from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as BotoConnectionError

    named = f"{setting}: " if setting else ""
    unanswered = 0
    retry = 0
    while True:
        try:
            if value.startswith(SSM_PREFIX):
                answer = client.get_parameter(Name=value.removeprefix(SSM_PREFIX), WithDecryption=True)
                secret = answer["Parameter"]["Value"]
            else:
                secret = client.get_secret_value(SecretId=value.removeprefix(SECRETS_MANAGER_PREFIX))["SecretString"]
            break
        except (BotoConnectionError, HTTPClientError) as error:
            unanswered += 1
            unavailable = SecretUnavailableError(
                f"{named}cannot reach the service holding {value!r}: {type(error).__name__} (in a VPC, give the "
                "function a route to it: a VPC endpoint or a NAT gateway)",
                setting,
            )
            if unanswered >= ATTEMPTS:
                raise unavailable from None
        except ClientError as error:
            code = str(error.response.get("Error", {}).get("Code", ""))
            status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            if code not in THROTTLES and status < 500:
                raise SettingsError(f"{named}cannot read the secret {value!r}: {code or 'ClientError'}") from None
            unavailable = SecretUnavailableError(
                f"{named}the service holding {value!r} answered {code or status} to every read until the deadline "
                "(a throttle, or a failure of its own: a later read may succeed; SSM's standard throughput is shared "
                "by the account and Region)",
                setting,
                throttled=True,
            )
        except (BotoCoreError, KeyError) as error:
            raise SettingsError(f"{named}cannot read the secret {value!r}: {type(error).__name__}") from None
        pause = patience.pause(retry, deadline)
        if pause is None:
            raise unavailable
        patience.sleep(pause)
        retry += 1
    if not secret:
        raise SettingsError(f"{named}the secret {value!r} is empty")
    return str(secret)


def resolve_reference(value: str) -> str:
    """A gateway upstream's header or env value: `env:NAME` reads this process's environment, `ssm:` and
    `secretsmanager:` the secret they name; anything else is the value itself.

    Raises:
        SettingsError: the variable is not set, or the secret cannot be read.
    """
    if value.startswith("env:"):
        name = value.removeprefix("env:")
        if name not in os.environ:
            raise SettingsError(f"the environment variable {name} is not set")
        return os.environ[name]
    return resolve_secret(value)


def settings_from_env(
    environ: Mapping[str, str] | None = None, *, patience: Patience | None = None, **overrides: Any
) -> Settings:
    """`Settings.from_env`, with the secret settings' references replaced by the secrets they name (each read once
    per container; `patience`: how long the reads together may wait out throttling, default a start's).

    Raises:
        SecretUnavailableError: the service holding a reference did not answer in time, or throttled it until the
            deadline (names the setting).
        SettingsError: a reference cannot be read (names the setting), or a setting is malformed.
    """
    environ = dict(os.environ if environ is None else environ)
    patience = patience or Patience()
    deadline = patience.monotonic() + patience.seconds
    for name in SECRET_SETTINGS:
        if name in environ:
            environ[name] = resolve_secret(environ[name], name, patience=patience, deadline=deadline)
    return Settings.from_env(environ, **overrides)


def settings_without_secrets(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings that need no secret read: which server to serve and where (the secret settings are left out, so
    the store is the in-memory default). For naming the app before its secrets can be read; never for serving it.

    Raises:
        SettingsError: a setting is malformed.
    """
    environ = os.environ if environ is None else environ
    # Without its client secret, the authorization front's settings would not validate: leave auth off here.
    left_out = (*SECRET_SETTINGS, f"{PREFIX}AUTH_MODE")
    return Settings.from_env({key: value for key, value in environ.items() if key not in left_out})
