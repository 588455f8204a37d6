"""Shared secrets named by reference (SSM, Secrets Manager) are read once per container; a throttled read is
retried with jittered pauses until a deadline, then deferred; a refusal is a settings error at once."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from stratus.errors import CIRCUIT_OPEN
from stratus.handlers.deferred import RETRY_SECONDS, DeferredStart
from stratus.handlers.secrets import (
    Patience,
    SecretUnavailableError,
    forget_secrets,
    patience_within,
    resolve_secret,
    settings_from_env,
)
from stratus.settings import SettingsError
from tests.fixtures.clocks import FakeClock
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


@dataclass
class Waits:
    """Stands in for time.sleep: records each pause and moves the clock by it."""

    clock: FakeClock
    pauses: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.clock.advance(seconds)


def _patience(seconds: float, clock: FakeClock, waits: Waits) -> Patience:
    """Full jitter's largest draw every time, so the pauses are the ceilings: 0.1 s, 0.2 s, 0.4 s, ..."""
    return Patience(seconds=seconds, sleep=waits, random=lambda: 1.0, monotonic=clock)


def _throttled(stubber: Stubber, operation: str, times: int, code: str = "ThrottlingException") -> None:
    for _ in range(times):
        stubber.add_client_error(operation, service_error_code=code, service_message="Rate exceeded")


def _ssm() -> Any:
    return boto3.client("ssm", region_name="us-east-1")


def _parameter(value: str) -> dict[str, Any]:
    return {"Parameter": {"Name": "/stratus/key", "Type": "SecureString", "Value": value, "Version": 1}}


GET_KEY = {"Name": "/stratus/key", "WithDecryption": True}


def test_a_throttled_ssm_read_is_retried_with_growing_jittered_pauses(aws_credentials: None) -> None:
    clock = FakeClock()
    waits = Waits(clock)
    ssm = _ssm()
    with Stubber(ssm) as stubber:
        _throttled(stubber, "get_parameter", 2)
        stubber.add_response("get_parameter", _parameter("from-ssm"), GET_KEY)
        secret = resolve_secret("ssm:/stratus/key", patience=_patience(3.0, clock, waits), client=ssm)
        stubber.assert_no_pending_responses()
    assert secret == "from-ssm"
    assert waits.pauses == [0.1, 0.2]


def test_a_pause_is_a_random_fraction_of_its_ceiling(aws_credentials: None) -> None:
    clock = FakeClock()
    waits = Waits(clock)
    ssm = _ssm()
    patience = Patience(seconds=3.0, sleep=waits, random=lambda: 0.25, monotonic=clock)
    with Stubber(ssm) as stubber:
        _throttled(stubber, "get_parameter", 3)
        stubber.add_response("get_parameter", _parameter("from-ssm"), GET_KEY)
        resolve_secret("ssm:/stratus/key", patience=patience, client=ssm)
    assert waits.pauses == [0.025, 0.05, 0.1]


def test_a_read_throttled_until_the_deadline_is_unavailable_not_refused(aws_credentials: None) -> None:
    """Pauses of 0.1, 0.2 and 0.4 s fit in 1 s; the next, 0.8 s, would end past it: four reads, then a deferral."""
    clock = FakeClock()
    waits = Waits(clock)
    ssm = _ssm()
    with Stubber(ssm) as stubber, pytest.raises(SecretUnavailableError) as unavailable:
        _throttled(stubber, "get_parameter", 4)
        resolve_secret("ssm:/stratus/key", "STRATUS_SECRET_KEY", patience=_patience(1.0, clock, waits), client=ssm)
    stubber.assert_no_pending_responses()
    assert waits.pauses == [0.1, 0.2, 0.4]
    assert unavailable.value.throttled
    assert unavailable.value.setting == "STRATUS_SECRET_KEY"


def test_a_secrets_manager_throttle_is_retried(aws_credentials: None) -> None:
    clock = FakeClock()
    waits = Waits(clock)
    secrets_manager = boto3.client("secretsmanager", region_name="us-east-1")
    with Stubber(secrets_manager) as stubber:
        _throttled(stubber, "get_secret_value", 1, "TooManyRequestsException")
        stubber.add_response("get_secret_value", {"SecretString": "from-sm"}, {"SecretId": "stratus-key"})
        secret = resolve_secret(
            "secretsmanager:stratus-key", patience=_patience(3.0, clock, waits), client=secrets_manager
        )
    assert secret == "from-sm"
    assert waits.pauses == [0.1]


def test_a_server_error_is_retried_like_a_throttle(aws_credentials: None) -> None:
    clock = FakeClock()
    waits = Waits(clock)
    ssm = _ssm()
    with Stubber(ssm) as stubber:
        stubber.add_client_error("get_parameter", service_error_code="InternalServerError", http_status_code=500)
        stubber.add_response("get_parameter", _parameter("from-ssm"), GET_KEY)
        assert resolve_secret("ssm:/stratus/key", patience=_patience(3.0, clock, waits), client=ssm) == "from-ssm"
    assert waits.pauses == [0.1]


@pytest.mark.parametrize("code", ["AccessDeniedException", "ParameterNotFound"])
def test_a_refusal_is_a_settings_error_naming_the_setting_at_once(aws_credentials: None, code: str) -> None:
    clock = FakeClock()
    waits = Waits(clock)
    ssm = _ssm()
    with Stubber(ssm) as stubber, pytest.raises(SettingsError) as refused:
        stubber.add_client_error("get_parameter", service_error_code=code)
        resolve_secret("ssm:/stratus/key", "STRATUS_SECRET_KEY", patience=_patience(3.0, clock, waits), client=ssm)
    assert not isinstance(refused.value, SecretUnavailableError)
    assert str(refused.value).startswith("STRATUS_SECRET_KEY: ")
    assert waits.pauses == []


def test_a_secret_is_read_once_per_container_until_forgotten(aws_credentials: None) -> None:
    """The Stubber answers one read: a second would fail on its empty queue."""
    ssm = _ssm()
    with Stubber(ssm) as stubber:
        stubber.add_response("get_parameter", _parameter("first"), GET_KEY)
        assert resolve_secret("ssm:/stratus/key", client=ssm) == "first"
        assert resolve_secret("ssm:/stratus/key", client=ssm) == "first"
        stubber.assert_no_pending_responses()
        forget_secrets()
        stubber.add_response("get_parameter", _parameter("rotated"), GET_KEY)
        assert resolve_secret("ssm:/stratus/key", client=ssm) == "rotated"


def test_settings_read_through_a_throttle_name_the_setting_when_it_outlasts_the_deadline(
    aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings' reads share one deadline; past it, the start defers, naming the setting."""
    clock = FakeClock()
    waits = Waits(clock)
    ssm = _ssm()
    monkeypatch.setattr(boto3, "client", lambda *args, **kwargs: ssm)
    with Stubber(ssm) as stubber, pytest.raises(SecretUnavailableError) as unavailable:
        _throttled(stubber, "get_parameter", 3)
        settings_from_env({"STRATUS_SECRET_KEY": "ssm:/stratus/key"}, patience=_patience(0.5, clock, waits))
    assert unavailable.value.setting == "STRATUS_SECRET_KEY"
    assert waits.pauses == [0.1, 0.2]


class _Context:
    def __init__(self, remaining_ms: int) -> None:
        self.remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


def test_an_invocations_patience_ends_before_the_invocation_does() -> None:
    assert patience_within(_Context(900_000), 30.0).seconds == 30.0
    assert patience_within(_Context(5_000), 30.0).seconds == 4.0
    assert patience_within(_Context(500), 30.0).seconds == 0.0
    assert patience_within(None, 30.0).seconds == 30.0


def test_a_start_still_throttled_answers_503_naming_the_setting_then_serves(
    aws_credentials: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As for an unreachable SSM (`handlers/deferred.py`): the start is deferred, not failed; the next try after
    the retry interval reads the secret and serves."""
    clock = FakeClock()
    waits = Waits(clock)
    ssm = _ssm()
    served: list[str] = []

    def build() -> Any:
        settings = settings_from_env({"STRATUS_SECRET_KEY": "ssm:/stratus/key"}, patience=_patience(0.2, clock, waits))
        served.append(str(settings.secret_key))
        return lambda event, context: {"statusCode": 200}

    monkeypatch.setattr(boto3, "client", lambda *args, **kwargs: ssm)
    with Stubber(ssm) as stubber:
        _throttled(stubber, "get_parameter", 2)
        handler = DeferredStart(build, monotonic=clock)
        deferred = handler({}, None)
        stubber.add_response("get_parameter", _parameter("from-ssm"), GET_KEY)
        clock.advance(RETRY_SECONDS)
        answered = handler({}, None)
    assert (deferred["statusCode"], deferred["headers"]["retry-after"]) == (503, "5")
    error = json.loads(deferred["body"])["error"]
    assert error["code"] == CIRCUIT_OPEN and "STRATUS_SECRET_KEY" in error["message"]
    assert answered == {"statusCode": 200}
    assert served == ["from-ssm"]
