"""Shared secrets named by reference (SSM, Secrets Manager) are read once, at cold start."""

from __future__ import annotations

import boto3
import pytest
from moto import mock_aws

from core import Settings
from core.config import SettingsError
from handlers.secrets import resolve_secret, with_resolved_secrets


def test_a_plain_value_is_the_secret_itself() -> None:
    assert resolve_secret("just-a-key") == "just-a-key"


def test_an_ssm_secure_string_is_decrypted(aws_credentials: None) -> None:
    with mock_aws():
        boto3.client("ssm").put_parameter(Name="/stratus/key", Value="from-ssm", Type="SecureString")
        settings = with_resolved_secrets(Settings(secret_key="ssm:/stratus/key"))
    assert settings.secret_key == "from-ssm"


def test_a_secrets_manager_secret_is_read(aws_credentials: None) -> None:
    with mock_aws():
        arn = boto3.client("secretsmanager").create_secret(Name="stratus-key", SecretString="from-sm")["ARN"]
        assert resolve_secret(f"secretsmanager:{arn}") == "from-sm"


def test_a_missing_secret_stops_the_start_with_its_name(aws_credentials: None) -> None:
    with mock_aws(), pytest.raises(SettingsError) as refused:
        resolve_secret("ssm:/does/not/exist")
    assert "ssm:/does/not/exist" in str(refused.value)
