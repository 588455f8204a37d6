"""Settings come from STRATUS_* variables, once, and a mistake stops the start."""

from __future__ import annotations

import ast
import base64
import secrets
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from stratus import Settings
from stratus import settings as config
from stratus.settings import SettingsError
from tests.fixtures.keys import SECRET_KEY

JWT = {
    "auth_issuer": "https://issuer.example",
    "auth_audience": "https://mcp.example/mcp",
    "auth_jwks_url": "https://issuer.example/jwks.json",
}


def test_defaults_name_no_app_and_the_memory_store() -> None:
    settings = Settings.from_env({})
    assert (settings.app, settings.store, settings.mcp_path) == (None, "memory://", "/mcp")


def test_variables_are_parsed_and_overrides_win() -> None:
    settings = Settings.from_env(
        {"STRATUS_ALLOWED_HOSTS": "a.example.com, b.example.com", "STRATUS_MAX_BODY_BYTES": "2048", "HOME": "/root"},
        app="examples.add:server",
        store=None,
    )
    assert settings.allowed_hosts == ("a.example.com", "b.example.com")
    assert settings.max_body_bytes == 2048
    assert settings.app == "examples.add:server"


@pytest.mark.parametrize(
    "environ",
    [
        {"STRATUS_STOER": "memory://"},
        {"STRATUS_MAX_BODY_BYTES": "-1"},
        {"STRATUS_MAX_BODY_BYTES": "lots"},
        {"STRATUS_STORE": "postgres://db"},
        {"STRATUS_MCP_PATH": "mcp"},
        {"STRATUS_APP": "no-colon"},
        {"STRATUS_AUTH_MODE": "basic"},
        {"STRATUS_STORE": "redis://127.0.0.1:6379/0"},
        {"STRATUS_STORE": "redis://"},
        {"STRATUS_STORE": "dynamodb://", "STRATUS_SECRET_KEY": SECRET_KEY},
        {"STRATUS_LIMITS_ON_STORE_FAILURE": "maybe"},
        {"STRATUS_TRUST_REQUEST_CONTEXT_HEADER": "yes"},
        {"STRATUS_BODY_TIMEOUT_SECONDS": "0"},
        {"STRATUS_SERVE_HEADER_TIMEOUT_SECONDS": "inf"},
        {"STRATUS_SERVE_MAX_CONNECTIONS": "-1"},
        {"STRATUS_MAX_BATCH_LENGTH": "0"},
        {"STRATUS_MAX_STREAMS": "1000"},  # not below the process's 1000 long-wait connections
        {"STRATUS_MAX_STREAMS": "0"},
        {"STRATUS_MAX_STREAMS_PER_SESSION": "-1"},
        {"STRATUS_MAX_TASKS": "0"},
        {"STRATUS_MAX_TASKS_PER_PRINCIPAL": "-1"},
        {"STRATUS_MAX_SESSIONS_PER_PRINCIPAL": "many"},
        {"STRATUS_AUTH_MODE": "jwt", "STRATUS_AUTH_ISSUER": "https://auth.example.com/"},
        {
            "STRATUS_AUTH_MODE": "jwt",
            "STRATUS_AUTH_ISSUER": "i",
            "STRATUS_AUTH_AUDIENCE": "mcp",
            "STRATUS_AUTH_JWKS_URL": "x",
        },
    ],
)
def test_a_bad_or_unknown_setting_fails_with_its_name(environ: dict[str, str]) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(environ)
    assert any(name in str(caught.value) for name in environ)


def test_the_request_context_header_is_trusted_only_when_told() -> None:
    assert Settings.from_env({}).trust_request_context_header is False
    assert Settings.from_env({"STRATUS_TRUST_REQUEST_CONTEXT_HEADER": "True"}).trust_request_context_header is True
    assert Settings.from_env({"STRATUS_TRUST_REQUEST_CONTEXT_HEADER": "false"}).trust_request_context_header is False


def test_slow_client_limits_have_production_defaults() -> None:
    settings = Settings.from_env({})
    assert (settings.serve_header_timeout_seconds, settings.body_timeout_seconds) == (10.0, 30.0)
    assert settings.serve_max_connections == 1000
    assert Settings.from_env({"STRATUS_SERVE_MAX_CONNECTIONS": "0"}).serve_max_connections == 0


def test_jwt_mode_reads_its_settings() -> None:
    settings = Settings.from_env(
        {
            "STRATUS_AUTH_MODE": "jwt",
            "STRATUS_AUTH_ISSUER": "https://auth.example.com/",
            "STRATUS_AUTH_AUDIENCE": "https://mcp.example.com/mcp",
            "STRATUS_AUTH_JWKS_URL": "https://auth.example.com/.well-known/jwks.json",
            "STRATUS_AUTH_SCOPES": "tools:read, tools:write",
        }
    )
    assert settings.auth_scopes == ("tools:read", "tools:write")


def test_a_shared_store_needs_the_shared_secret() -> None:
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"STRATUS_STORE": "rediss://cache.example.com:6379"})
    assert "STRATUS_SECRET_KEY" in str(refused.value)
    settings = Settings.from_env({"STRATUS_STORE": "rediss://cache.example.com:6379", "STRATUS_SECRET_KEY": SECRET_KEY})
    assert settings.store == "rediss://cache.example.com:6379"


@pytest.mark.parametrize("weak", ["summer2026", "k" * 64, "0123456789abcdef" * 4, "correct horse battery staple"])
@pytest.mark.parametrize(
    "where",
    [
        {"STRATUS_STORE": "rediss://cache.example.com:6379"},
        {"STRATUS_STORE": "dynamodb://stratus"},
        {
            "STRATUS_AUTH_MODE": "front",
            "STRATUS_AUTH_AUDIENCE": "https://mcp.example.com/mcp",
            "STRATUS_AUTH_UPSTREAM_ISSUER": "https://idp.example.com",
            "STRATUS_AUTH_UPSTREAM_CLIENT_ID": "stratus",
            "STRATUS_AUTH_UPSTREAM_CLIENT_SECRET": "upstream",
        },
    ],
)
def test_a_guessable_secret_key_is_refused_where_a_shared_store_or_the_front_signs_with_it(
    weak: str, where: dict[str, str]
) -> None:
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({**where, "STRATUS_SECRET_KEY": weak})
    message = str(refused.value)
    assert "STRATUS_SECRET_KEY" in message and "openssl rand -hex 32" in message and weak not in message
    assert Settings.from_env({**where, "STRATUS_SECRET_KEY": SECRET_KEY}).secret_key == SECRET_KEY


@pytest.mark.parametrize(
    "make",
    [
        lambda: secrets.token_hex(32),
        lambda: secrets.token_urlsafe(32),
        lambda: base64.b64encode(secrets.token_bytes(32)).decode(),
    ],
)
def test_a_key_of_32_random_bytes_in_hex_or_base64_is_accepted(make: Callable[[], str]) -> None:
    for _ in range(200):
        key = make()
        assert Settings.from_env({"STRATUS_STORE": "dynamodb://stratus", "STRATUS_SECRET_KEY": key}).secret_key == key


def test_a_weak_key_is_still_accepted_in_one_process_without_the_front() -> None:
    assert Settings.from_env({"STRATUS_SECRET_KEY": "k"}).secret_key == "k"  # memory://: cursors of one process


def test_the_seed_mcp_http_variables_are_honoured_and_stratus_ones_win() -> None:
    settings = Settings.from_env(
        {
            "MCP_HTTP_ALLOWED_HOSTS": "mcp.example.com",
            "MCP_HTTP_ALLOWED_ORIGINS": "https://app.example.com,https://b.example.com",
            "MCP_HTTP_SESSION_TIMEOUT": "1800000",
            "STRATUS_ALLOWED_ORIGINS": "https://winner.example.com",
        }
    )
    assert settings.allowed_hosts == ("mcp.example.com",)
    assert settings.allowed_origins == ("https://winner.example.com",)
    assert settings.session_ttl_seconds == 1800  # milliseconds in the seed, seconds here
    assert Settings.from_env({}).allowed_hosts == ()  # DNS-rebinding protection stays on by default
    assert Settings.from_env({"MCP_HTTP_ENABLE_DNS_REBINDING_PROTECTION": "false"}).allowed_hosts == ("*",)
    with pytest.raises(SettingsError, match="MCP_HTTP_"):
        Settings.from_env({"MCP_HTTP_SESSION_TIMEOUT": "soon"})


@pytest.mark.parametrize(
    ("module", "settings", "named"),
    [
        ("redis", {"store": "redis://127.0.0.1:6379/0", "secret_key": SECRET_KEY}, "STRATUS_STORE=redis://"),
        ("boto3", {"store": "dynamodb://t", "secret_key": SECRET_KEY}, "STRATUS_STORE=dynamodb://"),
        ("jwt", {**JWT, "auth_mode": "jwt"}, "STRATUS_AUTH_MODE=jwt"),
        ("aws_lambda_powertools", {"telemetry": "powertools"}, "STRATUS_TELEMETRY=powertools"),
        ("opentelemetry.sdk", {"tracing": "xray"}, "STRATUS_TRACING=xray"),
    ],
)
def test_a_setting_whose_package_is_missing_names_the_package_and_its_extra(
    module: str, settings: dict[str, str], named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A None in sys.modules is how Python marks a module that cannot be imported."""
    Settings(**settings)  # type: ignore[arg-type]
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(SettingsError) as refused:
        Settings(**settings)  # type: ignore[arg-type]
    assert named in str(refused.value) and "pip install 'stratus-mcp[" in str(refused.value)


def test_every_setting_has_one_docstring_of_its_own() -> None:
    """Each field's docstring stands right below it, and only one: a second string after a field documents the
    field that lost its own (as when two fields' docstrings were swapped past each other)."""
    source = Path(config.__file__).read_text(encoding="utf-8")
    settings = next(
        node for node in ast.parse(source).body if isinstance(node, ast.ClassDef) and node.name == "Settings"
    )
    body = settings.body
    undocumented: list[str] = []
    extra: list[int] = []
    for index, node in enumerate(body):
        following = body[index + 1] if index + 1 < len(body) else None
        is_doc = isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and not is_doc:
            undocumented.append(node.target.id)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and is_doc:
            extra.append(following.lineno if following else 0)
    assert (undocumented, extra) == ([], [])


def test_an_unknown_log_level_is_refused_at_start_naming_what_is_accepted() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"STRATUS_LOG_LEVEL": "LOUD"})
    assert caught.value.problems == ["STRATUS_LOG_LEVEL='LOUD': must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL"]
    assert Settings.from_env({"STRATUS_LOG_LEVEL": "debug"}).log_level == "debug"


def test_a_redis_database_that_is_not_a_number_is_refused() -> None:
    from stratus.stores.urls import StoreConfigError, parse_store_url

    with pytest.raises(StoreConfigError):
        parse_store_url("redis://127.0.0.1:6379/zero")
    assert parse_store_url("redis://127.0.0.1:6379/3").redis_url == "redis://127.0.0.1:6379/3"
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"STRATUS_STORE": "redis://127.0.0.1:6379/zero", "STRATUS_SECRET_KEY": SECRET_KEY})
    assert "STRATUS_STORE" in str(caught.value) and "'/zero'" in str(caught.value)


def test_a_mistyped_setting_gets_a_did_you_mean() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"STRATUS_LOG_LEVL": "INFO"})
    assert "did you mean STRATUS_LOG_LEVEL?" in str(caught.value)


def test_every_problem_is_reported_at_once_one_per_setting() -> None:
    environ = {
        "STRATUS_LOG_LEVEL": "LOUD",
        "STRATUS_MAX_BODY_BYTES": "lots",
        "STRATUS_STOER": "memory://",
        "STRATUS_AUTH_MODE": "basic",
        "STRATUS_LIMITS_ON_STORE_FAILURE": "maybe",
    }
    with pytest.raises(SettingsError) as caught:
        Settings.from_env(environ)
    problems = caught.value.problems
    assert len(problems) == len(environ)
    for name, value in environ.items():
        assert any(name in problem and repr(value) in problem for problem in problems), name


def test_the_repr_of_settings_hides_the_secrets_and_the_stores_password() -> None:
    settings = Settings(
        store="redis://app:hunter2@cache.example:6379/0",
        secret_key=SECRET_KEY,
        auth_upstream_client_secret="client-secret-1",
        auth_mode="front",
        auth_audience="https://mcp.example/mcp",
        auth_upstream_issuer="https://id.example",
        auth_upstream_client_id="stratus",
    )
    shown = repr(settings)
    assert shown.startswith("Settings(app=None, store='redis://***@cache.example:6379/0', ")
    assert "secret_key='***'" in shown and "auth_upstream_client_secret='***'" in shown
    assert not any(secret in shown for secret in ("hunter2", "signing-key-1", "client-secret-1"))
    assert "secret_key=None" in repr(Settings())  # unset is shown as unset


def test_streams_are_held_by_default_in_a_long_lived_process_and_polled_on_lambda() -> None:
    long_lived = Settings.from_env({})
    assert (long_lived.lambda_host, long_lived.stream_hold_seconds) == (False, long_lived.max_stream_seconds)
    on_lambda = Settings.from_env({"AWS_LAMBDA_FUNCTION_NAME": "stratus-mcp"})
    assert (on_lambda.lambda_host, on_lambda.stream_hold_seconds) == (True, 0.0)
    overridden = Settings.from_env({"AWS_LAMBDA_FUNCTION_NAME": "stratus-mcp", "STRATUS_POLL_HOLD_SECONDS": "3"})
    assert overridden.stream_hold_seconds == 3.0
    assert Settings.from_env({"STRATUS_POLL_HOLD_SECONDS": "0"}).stream_hold_seconds == 0.0
    declared = Settings.from_env({"AWS_LAMBDA_FUNCTION_NAME": "x", "STRATUS_LAMBDA_HOST": "false"})
    assert declared.lambda_host is False  # the variable, when set, is the override


def test_a_poll_hold_past_the_stream_limit_is_refused_naming_both_settings() -> None:
    with pytest.raises(SettingsError) as refused:
        Settings.from_env({"STRATUS_POLL_HOLD_SECONDS": "900"})
    assert any(
        "STRATUS_POLL_HOLD_SECONDS" in problem and "STRATUS_MAX_STREAM_SECONDS" in problem
        for problem in refused.value.problems
    )


def test_settings_built_in_code_inside_lambda_poll_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """An app that builds its Settings by hand and is served on Lambda (a FastAPI mount behind the Web Adapter) does
    not hold its streams: Lambda names the function in every process it runs."""
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "my-fastapi-app")
    assert Settings().stream_hold_seconds == 0.0
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME")
    assert Settings().stream_hold_seconds == Settings().max_stream_seconds
