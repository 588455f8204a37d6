"""Settings: read once from the environment at cold start, validated, then passed down.

This is the only module in `core/` that reads environment variables. An unknown `STRATUS_*` variable or a bad
value fails at cold start with a message naming it, not on the ten-thousandth request.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from stratus.mcp_http_variables import session_api_settings
from stratus.setting_values import PARSERS, strong_secret
from stratus.stores.bounded import DYNAMODB_MAX_RECORD_BYTES
from stratus.stores.urls import WAITING_CONNECTIONS, StoreConfigError, StoreUrl, parse_store_url

PREFIX = "STRATUS_"
MAX_POLL_RETRY_SECONDS = 3600.0
"""The longest `retry:` a stream may suggest: a client told to wait longer would miss notifications for hours."""
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
"""The levels `STRATUS_LOG_LEVEL` accepts, in any case."""


class SettingsError(ValueError):
    """A configuration value is missing, unknown or malformed; `problems` holds one message per problem, each naming
    the variable, its value and what is accepted."""

    def __init__(self, problems: str | list[str]) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        if len(self.problems) == 1:
            super().__init__(self.problems[0])
        else:
            super().__init__(f"{len(self.problems)} problems in the settings:\n  " + "\n  ".join(self.problems))


class AudienceUnsetError(SettingsError):
    """The only problem is `auth_audience`, in jwt or front mode: unset, not a URL, or outside the stage path. On
    Lambda its function starts anyway and answers 503 naming it (`stratus.handlers.deferred`): the documented first
    deploy has no URL to give it yet, and under SnapStart a start that failed would fail the version's
    publication, rolling the stack back."""


SECRET_FIELDS = ("secret_key", "store", "auth_upstream_client_secret")
"""Settings that may hold a secret (the store's URL, a password in it): never shown whole, and read from SSM or
Secrets Manager where their value names a parameter (handlers/secrets.py)."""


# No generated `__eq__`, `__hash__` or `__repr__`: over fifty fields they cost a cold start about 1 ms to build
# (docs/benchmarks.md).
LAMBDA_FUNCTION_VARIABLE = "AWS_LAMBDA_FUNCTION_NAME"
"""Set by Lambda in every process it runs: the app is on Lambda (`Settings.lambda_host`)."""


@dataclass(frozen=True, slots=True, kw_only=True, repr=False, eq=False)
class Settings:
    """Everything a deployment configures. Each field is `STRATUS_<FIELD>` in the environment.

    Compared by identity, and shown with its secrets hidden (`__repr__`)."""

    app: str | None = None
    """The server to serve, as `module:attribute`. Unset, the entry points serve the demo (`examples.demo:server`)
    where it can be imported (a checkout of Stratus, the Lambda build that copies `examples/`), and otherwise stop
    naming this setting (`stratus.handlers.loading`): the wheel does not install the demo."""
    store: str = "memory://"
    """Where state lives: `memory://` (this build), later `redis://...` or `dynamodb://TABLE`."""
    store_prefix: str = "stratus"
    """Prefix of every key Stratus writes to a shared store."""
    store_timeout_seconds: float = 2.0
    """How long one store operation may take before the request fails with 503."""
    limits_on_store_failure: str = "open"
    """When the store cannot be reached, rate limits and breakers `open` (let calls through, logged and counted)
    or `closed` (refuse with 503). Sessions always fail closed."""
    mcp_path: str = "/mcp"
    """The MCP endpoint's path."""
    allowed_hosts: tuple[str, ...] = ()
    """Extra Host values to accept, beside localhost and the API Gateway domain the request arrived on."""
    allowed_origins: tuple[str, ...] = ()
    """Extra Origin values to accept, beside localhost origins and the request's own origin."""
    trust_request_context_header: bool = False
    """Whether the `x-amzn-request-context` header comes from the AWS Lambda Web Adapter, which sets it on every
    request it forwards: then the API domain it names is served. Only the streaming function, behind the adapter,
    sets it; anywhere else a client could write the header and name its own domain."""
    gateway_config: str | None = None
    """A `{"mcpServers": {...}}` JSON file: serve those upstream servers as one gateway instead of `app`."""
    gateway_allowed_networks: tuple[str, ...] = ()
    """Private networks (CIDR) the gateway may reach upstreams in (and the authorization front client metadata
    documents in), e.g. `127.0.0.0/8` for local servers; loopback, private, link-local and metadata addresses are
    refused otherwise."""
    max_stream_seconds: float = 840.0
    """A resumable (handshake-era) SSE response ends cleanly after this long, below Lambda's 15-minute limit;
    the client resumes it with `Last-Event-ID` while the call goes on. 2026-07-28 streams are not cut."""
    keepalive_seconds: float = 15.0
    """Under uvicorn: a call whose client accepts SSE and that has sent nothing for this long answers on an SSE
    stream with keep-alive comments until its result, so no front door cuts a silent response (API Gateway REST
    streaming ends one idle for 5 minutes). A session's GET stream and a resumed stream write one after this long
    without an event too."""
    lambda_host: bool = field(default_factory=lambda: bool(os.environ.get(LAMBDA_FUNCTION_VARIABLE)))
    """In Lambda a response is billed until it ends, even once its client left: every GET stream is a poll (of clients
    before 2025-11-25 too) and `poll_hold_seconds` defaults to 0. True where Lambda named the function, and always
    under the Lambda entry points."""
    poll_hold_seconds: float | None = None
    """How long a stream with nothing to relay stays open (GET, `/events`, a resumed call's stream) before it ends
    with the id to resume from and a `retry:`. None: by host (`stream_hold_seconds`): 0 on Lambda, so no invocation
    is held by an idle or departed client (a hold is billed on every poll: docs/deploy.md, "What it costs"); up to
    `max_stream_seconds` in a long-lived process, where events reach a held stream as they happen."""
    poll_retry_seconds: float = 5.0
    """The `retry:` an ended GET or `/events` stream suggests: how soon an idle client polls again, and so the longest
    a list change or resource update waits to reach it (docs/deploy.md, "What it costs")."""
    max_streams: int = 500
    """At most this many streams (GET streams and their resumptions, `/events`, `subscriptions/listen`) open at once
    in one process, counted per process like the connection pool they hold: below the pool's 1000, so one more is
    refused with 503 and Retry-After before the pool runs dry for anyone."""
    max_streams_per_session: int = 4
    """At most this many of them open at once for one session (0: no cap); one more is refused with 429."""
    max_streams_per_principal: int = 32
    """At most this many of them open at once for one authenticated principal (0: no cap); one more is refused with
    429. Anonymous callers cannot be told apart: only their sessions' cap and the process's bound them."""
    max_tasks: int = 200
    """At most this many tasks run at once in one process (tasks run in process, without `task_worker`); one more
    is refused with 503 and Retry-After naming this setting."""
    max_tasks_per_principal: int = 16
    """At most this many live tasks (working or waiting for input) per principal, or per source address of anonymous
    callers, across every container (0: no cap); one more is refused with 429 naming this setting."""
    anonymous_task_ttl_seconds: int = 3600
    """The longest an anonymous caller's task lives, whatever `ttl` it asks (0: up to the protocol's 24 hours)."""
    max_body_bytes: int = 4 * 1024 * 1024
    """Request bodies above this size are refused with 413 and a JSON-RPC error naming this setting. Below every
    front door's own limit (a Function URL's 6 MB invocation payload, API Gateway's 10 MB), so the client gets
    this answer rather than the front door's."""
    max_response_bytes: int = 6 * 1024 * 1024
    """Behind the buffered handler (API Gateway, a `BUFFERED` Function URL): an answer whose Lambda response
    payload (the body escaped as a JSON string, plus status and headers) would pass this many bytes is replaced by
    a JSON-RPC error -32603 naming this setting and the streaming endpoint, instead of the front door's bare 5xx.
    Lambda returns at most 6 MB from a synchronous invocation
    (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html); 0: no check. Streamed responses
    (uvicorn, the streaming function: 200 MB) are not bound by it."""
    body_timeout_seconds: float = 30.0
    """A request body not wholly received this long after the endpoint starts reading it is answered 408 (and the
    connection closed): a client trickling its body holds no connection for longer."""
    max_batch_length: int = 100
    """A 2025-03-26 batch of more messages than this is refused with 400."""
    max_batch_response_bytes: int = 4 * 1024 * 1024
    """Once a batch's answers reach this size, its remaining requests are not run; each is answered with an error
    the client can resend it on."""
    max_record_bytes: int = DYNAMODB_MAX_RECORD_BYTES
    """The most a store keeps in one record, on every backend alike: a session's encoded record, one stream event
    (a logged notification, request or final answer), a client's reply, a task's request and result together.
    Past it a task fails with a JSON-RPC error -32603 naming this setting (it never stays `working`), a logged final
    answer is replaced in the log by that error (the connected client still gets the answer), and a session, event
    or reply is refused with it. Default and maximum on DynamoDB: 400 KB (its item limit,
    https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html) less 16 KiB for keys and
    attribute names; Redis and memory may go higher, or 0 for no bound."""
    session_ttl_seconds: int = 1800
    """A handshake-era session ends after this long without a request."""
    max_sessions: int = 100
    """At most this many handshake-era sessions live at once across every container (0: no limit); a new one beyond it
    is refused with 503 naming the limit."""
    max_sessions_per_principal: int = 10
    """At most this many of those sessions belong to one authenticated principal (0: no quota), so one caller cannot
    hold every place; one more is refused with 503 naming this setting. Anonymous callers (auth off) cannot be told
    apart, so only `max_sessions` bounds them."""
    serve_header_timeout_seconds: float = 10.0
    """Under uvicorn (`stratus serve`, the streaming Lambda): a connection whose request headers are not complete
    this long after it opened (or after the request's first byte, on a kept-alive connection) is closed."""
    serve_max_connections: int = 1000
    """Under uvicorn: at most this many connections are served at once; a request on one more is answered 503
    (0: no limit)."""
    task_worker: str | None = None
    """The Lambda function (name or ARN) that runs tasks, invoked asynchronously once per task; unset, a task
    runs in the process that created it (uvicorn, `stratus serve`)."""
    task_worker_durable: str | None = None
    """The durable task worker (a Lambda durable function: docs/deploy.md, "Durable tasks") that runs tasks instead,
    by its qualified ARN or `name:alias`; relayed calls still run in `task_worker`, which it needs."""
    secret_key: str | None = None
    """Key that signs pagination cursors, request state and (front mode) the front's tokens; set it so every
    container accepts every other's. With a shared store or the front it must be at least 32 random bytes (64 hex
    characters: `openssl rand -hex 32`)."""
    eager_invocations: bool = True
    """Behind the buffered handler: each invocation starts as an eager task on the container's event loop
    (`ContainerLoop`, which reads asyncio's private state: tested on CPython 3.11 to 3.13). `false` runs each on a
    plain event loop's `run_until_complete`, the fallback for a Python release that loop does not know."""
    log_level: str = "INFO"
    """Level of the server's own logs."""
    telemetry: str = "local"
    """`local` (counted in memory, plain logs), `emf` (JSON logs + CloudWatch EMF metrics, for Lambda) or
    `powertools` (the same through Powertools for AWS Lambda, at about 33 ms more per cold start)."""
    metrics_namespace: str = "Stratus"
    """The CloudWatch namespace of the metrics in `emf` and `powertools` telemetry."""
    tracing: str = "off"
    """`off` (nothing of OpenTelemetry imported), `console` (each request's spans printed as a waterfall), `otlp` (sent
    to the OTLP/HTTP endpoint `OTEL_EXPORTER_OTLP_ENDPOINT` names) or `xray` (sent to X-Ray's OTLP endpoint in the
    function's Region, signed with its role's credentials), flushed before each invocation ends: the `otel` extra
    (`stratus.tracing`)."""
    metrics_tools: tuple[str, ...] = ()
    """The tools (resources, prompts) whose metrics carry their name as the `item` dimension (`*`: every one); the
    others are counted per method and outcome. Each combination of dimension values is a custom metric, billed
    monthly (docs/deploy.md, "What it costs")."""
    auth_mode: str = "off"
    """`off`, `jwt` (verify bearer JWTs against a JWKS), `gateway` (trust API Gateway's authorizer claims) or
    `front` (be the authorization server of this resource, signing users in at an upstream OpenID provider:
    docs/deploy.md, "Sign-in")."""
    auth_issuer: str | None = None
    """The token issuer (`iss`) accepted in `jwt` mode; also advertised as the authorization server."""
    auth_audience: str | None = None
    """This server's canonical URL, required as the token audience (`aud`) in `jwt` mode."""
    auth_jwks_url: str | None = None
    """Where the issuer publishes its signing keys (JWKS), in `jwt` mode."""
    auth_scopes: tuple[str, ...] = ()
    """Scopes advertised in the protected-resource metadata and in challenges."""
    auth_upstream_issuer: str | None = None
    """`front` mode: the OpenID provider users sign in at (its discovery document is read from this issuer)."""
    auth_upstream_client_id: str | None = None
    """`front` mode: the one client the upstream provider knows this server as."""
    auth_upstream_client_secret: str | None = None
    """`front` mode: that client's secret (or `ssm:` / `secretsmanager:` naming where it is kept)."""
    auth_upstream_scopes: tuple[str, ...] = ("openid", "email")
    """`front` mode: the scopes asked of the upstream provider (`openid` is always asked)."""
    auth_token_seconds: int = 900
    """`front` mode: how long an access token this server issues lasts."""
    auth_refresh_seconds: int = 30 * 86400
    """`front` mode: how long a refresh grant lasts unused (each refresh rotates it)."""
    auth_registration_seconds: int = 90 * 86400
    """`front` mode: how long a dynamically registered client is kept."""
    auth_registrations_per_hour: int = 20
    """`front` mode: how many clients one source address may register per hour (a burst of as many); it may start
    ten times as many sign-ins and client metadata document fetches."""
    auth_stage_path: str = ""
    """The path prefix the OAuth front door puts before the app's own paths and strips before the app sees them:
    an API Gateway REST API stage (`/v1`) reached without a custom domain. The metadata URL of challenges is then
    inside the stage, where the front door routes it; empty for the HTTP API, a Function URL or a custom domain."""

    def __repr__(self) -> str:
        shown = ", ".join(f"{each.name}={_shown(each.name, getattr(self, each.name))}" for each in fields(self))
        return f"Settings({shown})"

    @property
    def stream_hold_seconds(self) -> float:
        """`poll_hold_seconds` when set, else by host: 0 on Lambda, `max_stream_seconds` in a long-lived process."""
        if self.poll_hold_seconds is not None:
            return self.poll_hold_seconds
        return 0.0 if self.lambda_host else self.max_stream_seconds

    def __post_init__(self) -> None:
        problems = self._problems()
        audience = self._audience_problems() if self.auth_mode in ("jwt", "front") else []
        if problems:
            raise SettingsError(problems + audience)
        if audience:
            raise AudienceUnsetError(audience)

    def _problems(self) -> list[str]:
        """Every problem of these settings, one message each naming the variable, its value and what is accepted."""
        problems: list[str] = []
        if not self.mcp_path.startswith("/"):
            problems.append(f"{PREFIX}MCP_PATH={self.mcp_path!r}: must start with '/', e.g. /mcp")
        if self.app is not None and ":" not in self.app:
            problems.append(f"{PREFIX}APP={self.app!r}: must be 'module:attribute', e.g. examples.demo:server")
        if self.telemetry not in ("local", "emf", "powertools"):
            problems.append(f"{PREFIX}TELEMETRY={self.telemetry!r}: must be local, emf or powertools")
        if self.tracing not in ("off", "console", "otlp", "xray"):
            problems.append(f"{PREFIX}TRACING={self.tracing!r}: must be off, console, otlp or xray")
        if self.auth_mode not in ("off", "jwt", "gateway", "front"):
            problems.append(f"{PREFIX}AUTH_MODE={self.auth_mode!r}: must be off, jwt, gateway or front")
        if self.log_level.upper() not in LOG_LEVELS:
            problems.append(f"{PREFIX}LOG_LEVEL={self.log_level!r}: must be one of {', '.join(LOG_LEVELS)}")
        if self.limits_on_store_failure not in ("open", "closed"):
            problems.append(f"{PREFIX}LIMITS_ON_STORE_FAILURE={self.limits_on_store_failure!r}: must be open or closed")
        if self.auth_mode in ("jwt", "front"):
            problems.extend(self._jwt_problems())
        if not 0 < self.max_streams < WAITING_CONNECTIONS:
            problems.append(
                f"{PREFIX}MAX_STREAMS={self.max_streams}: must be between 1 and {WAITING_CONNECTIONS - 1}: every open "
                f"stream holds one of the {WAITING_CONNECTIONS} connections of a process's pool for long waits, and "
                "calls awaiting a client's reply need some too"
            )
        if self.poll_hold_seconds is not None and not 0 <= self.poll_hold_seconds < self.max_stream_seconds:
            problems.append(
                f"{PREFIX}POLL_HOLD_SECONDS={self.poll_hold_seconds}: must be 0 or more and below "
                f"{PREFIX}MAX_STREAM_SECONDS ({self.max_stream_seconds})"
            )
        if not 0 < self.poll_retry_seconds <= MAX_POLL_RETRY_SECONDS:
            problems.append(
                f"{PREFIX}POLL_RETRY_SECONDS={self.poll_retry_seconds}: must be above 0 and at most "
                f"{MAX_POLL_RETRY_SECONDS:g}"
            )
        if self.max_tasks < 1:
            problems.append(f"{PREFIX}MAX_TASKS={self.max_tasks}: must be at least 1")
        if self.max_tasks_per_principal < 0:
            problems.append(
                f"{PREFIX}MAX_TASKS_PER_PRINCIPAL={self.max_tasks_per_principal}: must be 0 (no cap) or more"
            )
        if self.task_worker_durable:
            problems.extend(self._durable_worker_problems(self.task_worker_durable))
        try:
            store = parse_store_url(self.store)
        except StoreConfigError as exc:
            problems.append(f"{PREFIX}STORE: {exc}")
            return problems
        if store.shared and not self.secret_key:
            problems.append(
                f"{PREFIX}SECRET_KEY must be set when {PREFIX}STORE is shared ({store.scheme}): every "
                "container must sign and check cursors and request state with the same key; make one with "
                "`openssl rand -hex 32`"
            )
        elif (store.shared or self.auth_mode == "front") and self.secret_key and not strong_secret(self.secret_key):
            where = f"{PREFIX}AUTH_MODE=front" if self.auth_mode == "front" else f"a shared {PREFIX}STORE"
            problems.append(
                f"{PREFIX}SECRET_KEY is not a random key: with {where} it signs cursors, request state and the "
                "authorization front's tokens, and a guessable one can be found offline. Use at least 32 random "
                "bytes as 64 hex or 43 base64url characters: `openssl rand -hex 32`"
            )
        if store.backend == "dynamodb" and not 0 < self.max_record_bytes <= DYNAMODB_MAX_RECORD_BYTES:
            problems.append(
                f"{PREFIX}MAX_RECORD_BYTES={self.max_record_bytes}: must be between 1 and {DYNAMODB_MAX_RECORD_BYTES} "
                "with DynamoDB: an item is at most 400 KB, keys and attribute names included"
            )
        problems.extend(self._missing_packages(store))
        return problems

    def _durable_worker_problems(self, function: str) -> list[str]:
        problems = []
        parts = function.split(":")
        if len(parts) != (8 if parts[0] == "arn" else 2) or not parts[-1]:
            problems.append(
                f"{PREFIX}TASK_WORKER_DURABLE={function!r}: must name a version or alias of the function (its ARN "
                "ending in :live, or worker:live): Lambda runs durable executions of a qualified function only"
            )
        if not self.task_worker:
            problems.append(
                f"{PREFIX}TASK_WORKER_DURABLE needs {PREFIX}TASK_WORKER, the plain task worker, where relayed calls run"
            )
        return problems

    def _jwt_problems(self) -> list[str]:
        needed = {
            "jwt": ("auth_issuer", "auth_jwks_url"),
            "front": (
                "auth_upstream_issuer",
                "auth_upstream_client_id",
                "auth_upstream_client_secret",
            ),
        }[self.auth_mode]
        missing = [name for name in needed if not getattr(self, name)]
        if missing:
            names = ", ".join(PREFIX + name.upper() for name in missing)
            return [f"{PREFIX}AUTH_MODE={self.auth_mode} needs {names}"]
        return [
            f"{PREFIX}{name.upper()}={getattr(self, name)!r}: must be an http(s) URL"
            for name in ("auth_jwks_url", "auth_upstream_issuer")
            if name in needed and not str(getattr(self, name)).startswith(("https://", "http://"))
        ]

    def _audience_problems(self) -> list[str]:
        if not self.auth_audience:
            return [f"{PREFIX}AUTH_MODE={self.auth_mode} needs {PREFIX}AUTH_AUDIENCE"]
        if not self.auth_audience.startswith(("https://", "http://")):
            return [f"{PREFIX}AUTH_AUDIENCE={self.auth_audience!r}: must be an http(s) URL"]
        problems: list[str] = []
        audience_path = "/" + str(self.auth_audience).split("://", 1)[-1].partition("/")[2]
        stage = self.auth_stage_path.rstrip("/")
        if stage and not (stage.startswith("/") and audience_path.startswith(stage + "/")):
            problems.append(
                f"{PREFIX}AUTH_STAGE_PATH={self.auth_stage_path!r}: must begin the path of {PREFIX}AUTH_AUDIENCE "
                "(e.g. /v1 for https://api.example.com/v1/mcp)"
            )
        return problems

    def _missing_packages(self, store: StoreUrl) -> list[str]:
        """A setting that needs an optional package names the package and the extra that brings it, at start-up
        rather than as a bare "No module named" on the first request that needs it (nothing is imported here)."""
        needed = [
            ("redis", "redis", f"{PREFIX}STORE={store.scheme}://") if store.backend == "redis" else None,
            ("boto3", "dynamodb", f"{PREFIX}STORE=dynamodb://") if store.backend == "dynamodb" else None,
            ("jwt", "jwt", f"{PREFIX}AUTH_MODE={self.auth_mode}") if self.auth_mode in ("jwt", "front") else None,
            ("aws_lambda_powertools", "powertools", f"{PREFIX}TELEMETRY=powertools")
            if self.telemetry == "powertools"
            else None,
            ("opentelemetry.sdk", "otel", f"{PREFIX}TRACING={self.tracing}") if self.tracing != "off" else None,
        ]
        return [
            f"{setting} needs the {module} package, which is not installed: pip install 'stratus-mcp[{extra}]'"
            for module, extra, setting in filter(None, needed)
            if not _installed(module)
        ]

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Settings from `STRATUS_*` variables, with keyword overrides (e.g. from command-line flags) on top.

        Raises:
            SettingsError: unknown variables, or values that do not parse or are refused: every one at once.
        """
        environ = os.environ if environ is None else environ
        known = [PREFIX + each.name.upper() for each in fields(cls)]
        problems: list[str] = []
        values: dict[str, Any] = session_api_settings(environ, problems)
        for key, raw in environ.items():
            if not key.startswith(PREFIX):
                continue
            if key not in known:
                problems.append(_unknown(key, raw, known))
                continue
            name = key[len(PREFIX) :].lower()
            try:
                values[name] = PARSERS.get(name, str)(raw)
            except ValueError as exc:
                problems.append(f"{key}={raw!r}: {exc}")
        values.setdefault("lambda_host", bool(environ.get(LAMBDA_FUNCTION_VARIABLE)))
        values.update({key: value for key, value in overrides.items() if value is not None})
        try:
            settings = cls(**values)  # the values that parsed are checked too, so every problem is told at once
        except SettingsError as exc:
            if isinstance(exc, AudienceUnsetError) and not problems:
                raise
            problems.extend(exc.problems)
        if problems:
            raise SettingsError(problems)
        return settings


def _shown(name: str, value: Any) -> str:
    """A setting's value as `Settings.__repr__` shows it: a secret as `'***'`, a URL's password (`user:pw@`)
    hidden."""
    if name not in SECRET_FIELDS or not value:
        return repr(value)
    if name == "store" and isinstance(value, str):
        scheme, separator, rest = value.partition("://")
        return repr(f"{scheme}{separator}***@{rest.rpartition('@')[2]}" if "@" in rest else value)
    return "'***'"


def _unknown(key: str, raw: str, known: list[str]) -> str:
    import difflib  # only for a setting nobody knows: not on every cold start

    close = difflib.get_close_matches(key, known, n=1)
    if close:
        return f"unknown setting {key}={raw!r}: did you mean {close[0]}?"
    return f"unknown setting {key}={raw!r}; known: {', '.join(known)}"


def _installed(module: str) -> bool:
    """Whether `module` can be imported (a submodule's parent package is imported to tell; nothing else is)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is not there
        return False
