"""Shared secrets named by reference (SSM, Secrets Manager) are read once, at cold start."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from stratus.handlers.secrets import resolve_secret, settings_from_env
from stratus.settings import SettingsError
from tests.fixtures.keys import SECRET_KEY


def test_a_plain_value_is_the_secret_itself() -> None:
    assert resolve_secret("just-a-key") == "just-a-key"


def test_an_ssm_secure_string_is_decrypted(aws_credentials: None) -> None:
    with mock_aws():
        boto3.client("ssm").put_parameter(Name="/stratus/key", Value="from-ssm", Type="SecureString")
        settings = settings_from_env({"STRATUS_SECRET_KEY": "ssm:/stratus/key"})
    assert settings.secret_key == "from-ssm"


def test_a_store_url_with_a_password_may_come_from_secrets_manager(aws_credentials: None) -> None:
    url = "rediss://:s3cret@cache.example.com:6379/0"
    with mock_aws():
        boto3.client("secretsmanager").create_secret(Name="stratus-redis", SecretString=url)
        settings = settings_from_env(
            {"STRATUS_STORE": "secretsmanager:stratus-redis", "STRATUS_SECRET_KEY": SECRET_KEY}
        )
    assert settings.store == url


def test_a_secrets_manager_secret_is_read(aws_credentials: None) -> None:
    with mock_aws():
        arn = boto3.client("secretsmanager").create_secret(Name="stratus-key", SecretString="from-sm")["ARN"]
        assert resolve_secret(f"secretsmanager:{arn}") == "from-sm"


def test_a_missing_secret_stops_the_start_with_its_name(aws_credentials: None) -> None:
    with mock_aws(), pytest.raises(SettingsError) as refused:
        resolve_secret("ssm:/does/not/exist")
    assert "ssm:/does/not/exist" in str(refused.value)
