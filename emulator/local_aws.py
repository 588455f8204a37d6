"""The whole stack served locally: every front door of the template on its own port, each function's containers
behind them, and Lambda's Invoke API for the functions that call each other.

Each container's environment is what Lambda gives a function
(https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html#configuration-envvars-runtime): the
template's variables plus the reserved ones (`AWS_LAMBDA_FUNCTION_NAME`, `_HANDLER`, `LAMBDA_TASK_ROOT`, ...),
and nothing of the emulator's own environment except AWS credentials and endpoints (the function's role stands in
for them on AWS). On top come the local overrides: the store and the secret key (the template's point at AWS
resources), the served app, and any extra the caller gives.
"""

from __future__ import annotations

import asyncio
import os
import random
import socket
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any
from urllib.parse import urlsplit

import uvicorn

from stratus.emulator.apigateway_http import HttpApiDoor
from stratus.emulator.apigateway_rest import RestApiDoor
from stratus.emulator.aws_apis import SERVICES, AwsApis
from stratus.emulator.billing import Bill
from stratus.emulator.containers import Container, FunctionError, FunctionPool, HandlerContainer
from stratus.emulator.durable_api import DurableApi
from stratus.emulator.event_queue import EventQueue
from stratus.emulator.function_url import FunctionUrlDoor
from stratus.emulator.iam import CallLog, Identities
from stratus.emulator.intrinsics import ACCOUNT_ID
from stratus.emulator.invoke_api import LambdaApi
from stratus.emulator.proxy_integration import FrontDoor
from stratus.emulator.stack import Function, Stack
from stratus.emulator.throughput import SSM_STANDARD_TPS
from stratus.emulator.time_scale import with_time_scale
from stratus.emulator.web_adapter import WebAdapterContainer

if TYPE_CHECKING:
    from stratus.emulator.durable_service import DurableService
    from stratus.emulator.trace_receiver import TraceReceiver

START_TIMEOUT_SECONDS = 20.0
STOP_TIMEOUT_SECONDS = 20.0
PORT_ATTEMPTS = 20
_PASSED_THROUGH = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")


@dataclass
class Options:
    """How the stack is served locally."""

    containers: int = 2
    """Most containers per function at once."""
    throttle: bool = False
    """Refuse an invocation that finds all `containers` busy, as Lambda refuses one past its concurrency (429),
    instead of waiting for one. Off by default: `containers` is a local cap far below the 1,000 an account's
    functions share, so throttling at it would refuse what AWS serves; a template's ReservedConcurrentExecutions
    (`StreamingReservedConcurrency`) throttles either way. A request that waits is dropped if its client leaves."""
    retire_rate: float = 0.0
    """The chance that a container is retired after an invocation."""
    seed: int | None = None
    environment: Mapping[str, str] = field(default_factory=dict)
    """Overrides for every function's environment."""
    host: str = "127.0.0.1"
    port: int = 0
    """The first front door's port, the others following it; 0 gives each a free port."""
    output: IO[bytes] | None = None
    """Where the containers' output goes (default: the emulator's own)."""
    iam: bool = True
    """Run each container with its function's execution role: its own access key, and its calls to the AWS APIs
    the emulator fronts (DynamoDB and SSM endpoints given as `AWS_ENDPOINT_URL_*`, Lambda's Invoke) checked against
    the role and refused with AccessDenied as AWS refuses them (`aws_apis`). Off: the containers get your own AWS
    credentials (to reach real AWS services) and nothing is checked."""
    time_scale: float = 1.0
    """Every time limit AWS applies (function timeouts, integration timeouts, the REST API's streaming limits) is
    multiplied by this: at 1/60 a test sees a call outlive the HTTP API's 30 s in half a second."""
    remap_www_authenticate: bool = False
    """The Function URLs and HTTP APIs answer the function's `WWW-Authenticate` as `x-amzn-Remapped-WWW-Authenticate`,
    as REST APIs always do. AWS documents the renaming for REST APIs only; for the other two it is reported, not
    documented (`proxy_integration.REPORTED_REMAPPED`), hence off by default: on, it shows whether a client still
    finds the authorization server when the challenge header does not arrive under its own name."""
    deliver_events_twice: bool = False
    """Deliver every asynchronous event twice, as Lambda's event queue may (`event_queue`): a function shows it runs
    a duplicate once. The retries of a failed event, and their delays (times `time_scale`), happen either way."""
    durable_time_scale: float = 1.0
    """The durable execution service's durations (waits, retry delays, callback and execution timeouts) multiplied by
    this: at 1/8640 a durable execution waits a day in ten seconds, whatever `time_scale` does to functions."""
    door_reports: bool = True
    """Write the REPORT line of each invocation a front door's request made. Off (`stratus local` below DEBUG), the
    door's line carries its billed time; the REPORT lines of other invocations (a task worker's) are written still."""
    ssm_tps: float = SSM_STANDARD_TPS
    """Parameter Store's throughput for the stack (with `iam`): SSM reads past this many a second are answered
    `ThrottlingException`, as AWS answers them past the standard 40 (`throughput`); lower shows a burst throttled
    with fewer containers, 0 turns it off."""
    traces: bool = False
    """Receive the containers' spans (`trace_receiver`): each container traces (`STRATUS_TRACING=otlp`, unless the
    template or the shell chose another exporter than `off`) to the emulator, which writes each span as it arrives
    and keeps them (`LocalAws.traces`). A template with `Traces=xray` gets the receiver without it, as X-Ray's OTLP
    endpoint (`AWS_ENDPOINT_URL_XRAY`), its spans signed and checked against each function's role."""


def _answers(endpoint: str) -> bool:
    """Whether `endpoint` accepts a connection. One that does not (an SSM out of reach, as in a VPC without a route)
    is left to the containers as it is, so they see it fail as they would on AWS rather than get the check's answer;
    no call reaches it to be checked."""
    url = urlsplit(endpoint)
    try:
        with socket.create_connection((url.hostname or "127.0.0.1", url.port or 80), timeout=1.0):
            return True
    except OSError:
        return False


class PublicationError(Exception):
    """A SnapStart function's init failed when its version was published: on AWS the deployment rolls back."""


@dataclass(frozen=True)
class Served:
    """One front door as served: its kind, its logical id, its base URL."""

    kind: str
    logical_id: str
    url: str


class LocalAws:
    """The stack's front doors and function pools on one event loop."""

    def __init__(self, stack: Stack, options: Options | None = None) -> None:
        self.options = options or Options()
        stack = with_time_scale(stack, self.options.time_scale)
        self.stack = stack
        self._lambda_endpoint = ""
        self._aws_endpoint = ""
        rng = random.Random(self.options.seed)  # noqa: S311 - reproducible scheduling, not secrets
        self.bill = Bill(self.options.output, door_reports=self.options.door_reports)
        self.pools = {
            name: FunctionPool(
                function,
                self._container,
                max_containers=self.options.containers,
                throttle=self.options.throttle,
                rng=random.Random(rng.random()),  # noqa: S311 - as above
                retire_rate=self.options.retire_rate,
                bill=self.bill,
            )
            for name, function in stack.functions.items()
        }
        self.identities = Identities()
        self.calls = CallLog()
        """Every AWS API call the containers made through the emulator (with `iam`)."""
        self.traces: TraceReceiver | None = None
        if self.options.traces or any(
            function.environment.get("STRATUS_TRACING") == "xray" for function in stack.functions.values()
        ):
            from stratus.emulator.trace_receiver import TraceReceiver

            self.traces = TraceReceiver(self.options.output)
        self.aws_apis = self._aws_apis()
        self.events = EventQueue(
            stack,
            self.pools,
            time_scale=self.options.time_scale,
            twice=self.options.deliver_events_twice,
            output=self.options.output,
        )
        identities = self.identities if self.options.iam else None
        self.durable: DurableApi | None = None
        if any(function.durable is not None for function in stack.functions.values()):
            self.durable = DurableApi(self.pools, self._durable_service, identities=identities, calls=self.calls)
        self.lambda_api = LambdaApi(
            self.pools,
            self.events,
            host=self.options.host,
            bill=self.bill,
            identities=identities,
            calls=self.calls,
            durable=self.durable,
        )
        remap = self.options.remap_www_authenticate
        self.doors: list[Any] = [
            *(HttpApiDoor(api, stack, self.pools, remap_www_authenticate=remap) for api in stack.http_apis),
            *(RestApiDoor(api, stack, self.pools, self.options.time_scale) for api in stack.rest_apis),
            *(FunctionUrlDoor(url, stack, self.pools, remap_www_authenticate=remap) for url in stack.function_urls),
            self.lambda_api,
            # Custom domains after the Lambda API, so the doors above keep their ports whether or not one is mapped.
            *(
                RestApiDoor(api, stack, self.pools, self.options.time_scale, mapping)
                for api in stack.rest_apis
                for mapping in api.mappings
            ),
            *([self.aws_apis] if self.aws_apis.targets or self.traces is not None else []),
        ]
        for door in self.doors:
            if isinstance(door, FrontDoor):
                door.access_log = self.options.output or sys.stdout.buffer
        self.served: list[Served] = []

    def _aws_apis(self) -> AwsApis:
        """The check in front of the AWS APIs the containers are pointed at (none without `iam`), and the local table
        standing in for each the template names."""
        targets: dict[str, str] = {}
        stand_ins: dict[str, str] = {}
        if self.options.iam:
            for function in self.stack.functions.values():
                given = self._given_environment(function)
                for service in SERVICES:
                    endpoint = given.get(f"AWS_ENDPOINT_URL_{service.upper()}")
                    if endpoint and service not in targets and _answers(endpoint):
                        targets[service] = endpoint
                declared, local = function.environment.get("STRATUS_STORE", ""), given.get("STRATUS_STORE", "")
                if declared.startswith("dynamodb://") and local.startswith("dynamodb://") and declared != local:
                    table = f"arn:aws:dynamodb:{self.stack.region}:{ACCOUNT_ID}:table/"
                    stand_ins[table + local.removeprefix("dynamodb://")] = table + declared.removeprefix("dynamodb://")
        return AwsApis(
            targets,
            self.identities,
            self.calls,
            region=self.stack.region,
            stand_ins=stand_ins,
            ssm_tps=self.options.ssm_tps,
            traces=self.traces,
            meter=self.bill.consumed,
        )

    @property
    def aws_endpoint(self) -> str:
        """Where the containers reach the AWS APIs the emulator checks, and its OTLP receiver (`POST /v1/traces`)
        with `traces`; empty when neither is served."""
        return self._aws_endpoint

    def url(self, logical_id: str) -> str:
        """The base URL of the front door `logical_id` (a REST API's is its first stage's)."""
        for served in self.served:
            if served.logical_id == logical_id:
                return served.url
        raise KeyError(logical_id)

    def environment(self, function: Function) -> dict[str, str]:
        """A container's environment: reserved variables, the function's, then the local overrides; with `iam`, its
        role's credentials, and the emulator's checked endpoints in place of the AWS APIs it fronts."""
        environment = self._given_environment(function)
        if self.traces is not None:
            traced = {"OTEL_EXPORTER_OTLP_ENDPOINT": self._aws_endpoint, "AWS_ENDPOINT_URL_XRAY": self._aws_endpoint}
            environment = {**traced, "OTEL_SERVICE_NAME": function.name, **environment}
            if self.options.traces and environment.get("STRATUS_TRACING", "off") == "off":
                environment["STRATUS_TRACING"] = "otlp"
        if self.options.iam:
            environment.update(self.identities.issue(function.name, function.role))
            for service in self.aws_apis.targets:
                environment[f"AWS_ENDPOINT_URL_{service.upper()}"] = f"{self._aws_endpoint}/{service}"
        return environment

    def _given_environment(self, function: Function) -> dict[str, str]:
        code = str(function.code_dir)
        environment = {
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"]),
            "LANG": "en_US.UTF-8",
            "TZ": ":UTC",
            "PYTHONPATH": code,
            "LAMBDA_TASK_ROOT": code,
            "_HANDLER": function.handler,
            "AWS_EXECUTION_ENV": f"AWS_Lambda_{function.runtime}",
            "AWS_REGION": self.stack.region,
            "AWS_DEFAULT_REGION": self.stack.region,
            "AWS_LAMBDA_FUNCTION_NAME": function.name,
            "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(function.memory_mb),
            "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
            "AWS_LAMBDA_INITIALIZATION_TYPE": "on-demand",
            "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{function.name}",
            "AWS_LAMBDA_LOG_STREAM_NAME": "local",
            "AWS_ACCESS_KEY_ID": "local",
            "AWS_SECRET_ACCESS_KEY": "local",
            "AWS_SESSION_TOKEN": "local",
            "AWS_ENDPOINT_URL_LAMBDA": self._lambda_endpoint,
            # What `sam local` sets, so code can tell it runs locally (aws/aws-sam-cli#6): Stratus's 503s then name
            # the local fix rather than AWS's (`stratus.handlers.deferred`).
            "AWS_SAM_LOCAL": "true",
        }
        environment.update({key: os.environ[key] for key in _PASSED_THROUGH if key in os.environ})
        environment.update(
            {
                key: value
                for key, value in os.environ.items()
                if key.startswith("AWS_ENDPOINT_URL_") and key != "AWS_ENDPOINT_URL_LAMBDA"
            }
        )
        environment.update(function.environment)
        environment.update(self.options.environment)
        return environment

    def _container(self, function: Function, initialization: str = "on-demand") -> Container:
        kind = WebAdapterContainer if function.behind_web_adapter else HandlerContainer
        environment = {**self.environment(function), "AWS_LAMBDA_INITIALIZATION_TYPE": initialization}
        logging = function.logging

        def logged(line: bytes) -> None:
            emf = line.startswith(b'{"_aws"')  # how stratus.observability starts an EMF document
            self.bill.logged(function.name, function.memory_mb, logging.application_bytes(line), emf=emf)

        return kind(function, environment, self.options.output, logged)

    def _durable_service(self) -> DurableService:
        """The local durable execution service, built by the first request that needs it, on this loop."""
        from stratus.emulator.dead_letters import DeadLetters
        from stratus.emulator.durable_service import DurableService

        loop = asyncio.get_running_loop()
        dead_letters = DeadLetters(self.stack.dead_letter_queues, self.stack.queue_readers, self.pools, loop)
        return DurableService(
            self.pools, loop, self.stack.region, time_scale=self.options.durable_time_scale, dead_letters=dead_letters
        )

    async def serve(self, stop: asyncio.Event, started: threading.Event | None = None) -> None:
        """Serve every front door until `stop` is set; then stop them and every container."""
        servers: list[uvicorn.Server] = []
        tasks: list[asyncio.Task[None]] = []
        try:
            # The first door's port opens last: once it answers, every door does.
            bases: dict[int, str] = {}
            for index in reversed(range(len(self.doors))):
                door = self.doors[index]
                port = self.options.port + index if self.options.port and not isinstance(door, AwsApis) else 0
                server, task = await self._listen(door, port)
                servers.append(server)
                tasks.append(task)
                bound = server.servers[0].sockets[0].getsockname()[1]
                bases[index] = f"http://{self.options.host}:{bound}"
                if isinstance(door, RestApiDoor):
                    bases[index] += door.base_path
                if isinstance(door, LambdaApi):  # its URL holds the stack's secret (invoke_api.py)
                    bases[index] = self._lambda_endpoint = door.endpoint(bases[index])
                if isinstance(door, AwsApis):
                    self._aws_endpoint = bases[index]
            self.served = [
                Served(door.kind, door.logical_id, bases[index])
                for index, door in enumerate(self.doors)
                if not isinstance(door, AwsApis)  # the containers' own, not a door of the stack
            ]
            for name, pool in self.pools.items():
                if pool.function.snapstart:
                    await self._publish(name, pool.function)
            if started is not None:
                started.set()
            await stop.wait()
        finally:
            if self.durable is not None:
                await self.durable.aclose()
            self.events.close()
            for server in servers:
                server.should_exit = True
            await asyncio.gather(*(pool.close() for pool in self.pools.values()), return_exceptions=True)
            await self.events.drain(STOP_TIMEOUT_SECONDS)
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.aws_apis.aclose()

    async def _publish(self, name: str, function: Function) -> None:
        """A SnapStart function's version published, as a deploy publishes it: Lambda runs its init (the import
        and the runtime's before-snapshot hooks) then, and a failed init fails the publication, so the deployment
        rolls back (https://docs.aws.amazon.com/lambda/latest/dg/snapstart.html,
        https://docs.aws.amazon.com/lambda/latest/dg/snapstart-troubleshooting.html). Here the stack does not start.
        The init runs in a container of its own, `AWS_LAMBDA_INITIALIZATION_TYPE=snap-start`, with the runtime's
        before-snapshot hooks (https://docs.aws.amazon.com/lambda/latest/dg/configuration-envvars.html); the
        containers that serve start on demand as before, since no process here can be restored from a snapshot.

        Raises:
            PublicationError: the init failed, with its reason.
        """
        container = self._container(function, "snap-start")
        try:
            await container.start()
        except FunctionError as error:
            raise PublicationError(
                f"{function.logical_id} ({name}): SnapStart's init at the version's publication failed, as it would "
                f"on AWS (the deployment rolls back): {error}"
            ) from None
        finally:
            await container.stop()

    def _spare_socket(self) -> socket.socket:
        """A socket bound to a free port that is not one of the front doors' consecutive ports (still to be bound
        when the containers' own AWS APIs take theirs)."""
        reserved = range(self.options.port, self.options.port + len(self.doors)) if self.options.port else range(0)
        for _ in range(PORT_ATTEMPTS):
            # TCP named, asyncio turns Nagle off per connection: else a body waited ~40 ms for a delayed ACK of its head
            family = socket.AF_INET6 if ":" in self.options.host else socket.AF_INET
            spare = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
            spare.bind((self.options.host, 0))
            if spare.getsockname()[1] not in reserved:
                return spare
            spare.close()
        raise OSError(f"no free port outside {reserved.start}-{reserved.stop - 1} in {PORT_ATTEMPTS} attempts")

    async def _listen(self, door: Any, port: int) -> tuple[uvicorn.Server, asyncio.Task[None]]:
        config = uvicorn.Config(
            door,
            host=self.options.host,
            port=port,
            log_level="warning",
            lifespan="off",
            server_header=False,
            timeout_graceful_shutdown=1,
        )
        server = uvicorn.Server(config)
        sockets = [self._spare_socket()] if isinstance(door, AwsApis) else None
        task = asyncio.create_task(server.serve(sockets=sockets))
        async with asyncio.timeout(START_TIMEOUT_SECONDS):
            while not server.started:
                if task.done():
                    raise OSError(f"{door.kind} {door.logical_id} could not listen on port {port}")
                await asyncio.sleep(0.01)
        return server, task

    @contextmanager
    def running(self) -> Iterator[LocalAws]:
        """Serve the stack on a thread of its own until the block ends (start and stop bounded in time)."""
        started = threading.Event()
        failure: list[BaseException] = []
        loop = asyncio.new_event_loop()
        stop = asyncio.Event()

        def run() -> None:
            try:
                loop.run_until_complete(self.serve(stop, started))
            except BaseException as error:  # noqa: BLE001 - handed to the caller's thread
                failure.append(error)
                started.set()
            finally:
                loop.close()

        thread = threading.Thread(target=run, name="stratus-local-aws", daemon=True)
        thread.start()
        if not started.wait(START_TIMEOUT_SECONDS) or failure:
            loop.call_soon_threadsafe(stop.set) if not loop.is_closed() else None
            thread.join(STOP_TIMEOUT_SECONDS)
            raise failure[0] if failure else TimeoutError("the local stack did not start")
        try:
            yield self
        finally:
            loop.call_soon_threadsafe(stop.set)
            thread.join(STOP_TIMEOUT_SECONDS)
