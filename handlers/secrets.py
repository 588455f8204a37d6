"""Secrets named by reference in settings, resolved once per cold start.

`STRATUS_SECRET_KEY` (the key every container signs cursors and request state with, and the authorization front
its tokens), `STRATUS_STORE` (a Redis URL may carry a password) and `STRATUS_AUTH_UPSTREAM_CLIENT_SECRET` may be
the value itself, or `ssm:<parameter name>` (an SSM SecureString, decrypted) or `secretsmanager:<secret id or ARN>`.
boto3 is imported only when a reference is used.

A read is bounded in time: inside a VPC without a route to SSM (no VPC endpoint, no NAT gateway) botocore would
otherwise wait 60 s per connection attempt, over several attempts, past Lambda's 10 s on-demand init
(https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtime-environment.html). A service that does not answer in
time raises `SecretUnavailableError`, which a handler may outlive (`handlers/deferred.py`); a refusal (no such
parameter, no permission) raises the plain `SettingsError`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from stratus import Settings
from stratus.settings import PREFIX, SECRET_FIELDS, SettingsError

SECRET_SETTINGS = tuple(f"{PREFIX}{name.upper()}" for name in SECRET_FIELDS)

SSM_PREFIX = "ssm:"
SECRETS_MANAGER_PREFIX = "secretsmanager:"
CONNECT_TIMEOUT_SECONDS = 2
READ_TIMEOUT_SECONDS = 2
ATTEMPTS = 2
"""Each read: at most two attempts of 2 s to connect and 2 s to answer (about 9 s at worst with the retry's
back-off, 4 s to an address that never answers the connection)."""


class SecretUnavailableError(SettingsError):
    """The service holding a secret did not answer in time (no route to it, or it timed out): a later read may
    succeed. `setting` names the variable whose reference could not be read, when it is known."""

    def __init__(self, message: str, setting: str = "") -> None:
        super().__init__(message)
        self.setting = setting


def resolve_secret(value: str) -> str:
    """The secret a reference names, or `value` itself when it is no reference.

    Raises:
        SettingsError: the reference cannot be read (missing, no permission, empty).
    """
    if not value.startswith((SSM_PREFIX, SECRETS_MANAGER_PREFIX)):
        return value
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as BotoConnectionError

    bounded = Config(
        connect_timeout=CONNECT_TIMEOUT_SECONDS,
        read_timeout=READ_TIMEOUT_SECONDS,
        retries={"mode": "standard", "max_attempts": ATTEMPTS},
    )
    try:
        if value.startswith(SSM_PREFIX):
            name = value.removeprefix(SSM_PREFIX)
            ssm = boto3.client("ssm", config=bounded)
            secret = ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"]
        else:
            name = value.removeprefix(SECRETS_MANAGER_PREFIX)
            secrets_manager = boto3.client("secretsmanager", config=bounded)
            secret = secrets_manager.get_secret_value(SecretId=name)["SecretString"]
    except (BotoConnectionError, HTTPClientError) as error:
        raise SecretUnavailableError(
            f"cannot reach the service holding {value!r}: {type(error).__name__} (in a VPC, give the function a "
            "route to it: a VPC endpoint or a NAT gateway)"
        ) from None
    except (ClientError, BotoCoreError, KeyError) as error:
        raise SettingsError(f"cannot read the secret {value!r}: {type(error).__name__}") from None
    if not secret:
        raise SettingsError(f"the secret {value!r} is empty")
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


def settings_from_env(environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
    """`Settings.from_env`, with the secret settings' references replaced by the secrets they name.

    Raises:
        SecretUnavailableError: the service holding a reference did not answer in time (names the setting).
        SettingsError: a reference cannot be read, or a setting is malformed.
    """
    environ = dict(os.environ if environ is None else environ)
    for name in SECRET_SETTINGS:
        if name in environ:
            try:
                environ[name] = resolve_secret(environ[name])
            except SecretUnavailableError as error:
                raise SecretUnavailableError(f"{name}: {error}", setting=name) from None
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
