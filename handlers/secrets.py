"""Secrets named by reference in settings, resolved once per cold start.

`STRATUS_SECRET_KEY` (the key every container signs cursors and request state with) and `STRATUS_STORE` (a
Redis URL may carry a password) may be the value itself, or `ssm:<parameter name>` (an SSM SecureString,
decrypted) or `secretsmanager:<secret id or ARN>`. boto3 is imported only when a reference is used.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from stratus import Settings
from stratus.config import PREFIX, SettingsError

SECRET_SETTINGS = (f"{PREFIX}SECRET_KEY", f"{PREFIX}STORE")

SSM_PREFIX = "ssm:"
SECRETS_MANAGER_PREFIX = "secretsmanager:"


def resolve_secret(value: str) -> str:
    """The secret a reference names, or `value` itself when it is no reference.

    Raises:
        SettingsError: the reference cannot be read (missing, no permission, empty).
    """
    if not value.startswith((SSM_PREFIX, SECRETS_MANAGER_PREFIX)):
        return value
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        if value.startswith(SSM_PREFIX):
            name = value.removeprefix(SSM_PREFIX)
            secret = boto3.client("ssm").get_parameter(Name=name, WithDecryption=True)["Parameter"]["Value"]
        else:
            name = value.removeprefix(SECRETS_MANAGER_PREFIX)
            secret = boto3.client("secretsmanager").get_secret_value(SecretId=name)["SecretString"]
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
        SettingsError: a reference cannot be read, or a setting is malformed.
    """
    environ = dict(os.environ if environ is None else environ)
    for name in SECRET_SETTINGS:
        if name in environ:
            environ[name] = resolve_secret(environ[name])
    return Settings.from_env(environ, **overrides)
