"""Lambda's durable execution service for `stratus local`: the official testing SDK's local service
(`aws-durable-execution-sdk-python-testing`: its executor, checkpoint processor, scheduler and web server), with the
stack's own functions as what it invokes.

What it models, from AWS's documentation of durable functions
(https://docs.aws.amazon.com/lambda/latest/dg/durable-functions.html):

- an execution starts when a durable function's version or alias is invoked with an execution name; the name admits
  one execution per function (a second start is `DurableExecutionAlreadyStartedException`,
  https://docs.aws.amazon.com/lambda/latest/dg/durable-execution-idempotency.html);
- each invocation replays the handler with the operations recorded so far, which the SDK in the container checkpoints
  through Lambda's API (`AWS_ENDPOINT_URL_LAMBDA`: the emulator's Lambda API forwards the durable-execution paths
  here);
- a wait or a callback suspends the execution: no invocation runs, so no container is held and nothing is billed
  (the bill's REPORT lines show each invocation, and none while it waits); a callback resumes it when
  `SendDurableExecutionCallbackSuccess` (or Failure) names it (https://docs.aws.amazon.com/lambda/latest/dg/
  durable-callbacks.html); `StopDurableExecution` ends it; its execution timeout (`DurableConfig`) ends it too;
- an invocation that fails (a crash, the function's timeout) is invoked again, and the replay decides what runs;
- an execution that ends FAILED, STOPPED or TIMED_OUT sends its input event to the function's dead-letter queue
  (`dead_letters`; https://docs.aws.amazon.com/lambda/latest/dg/durable-best-practices.html).

On a scaled clock the execution timeout is scaled too (at least a second): the testing SDK arms it in real seconds.

Each invocation is one of the function's pool (`containers.FunctionPool`), as any Invoke is: a container, its timeout,
its bill. The service calls it from its own threads, so it is handed to the emulator's event loop.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import math
import threading
import time
from typing import TYPE_CHECKING, Any

from aws_durable_execution_sdk_python_testing.checkpoint.processor import CheckpointProcessor
from aws_durable_execution_sdk_python_testing.child_dispatcher import UnconfiguredChildDispatcher
from aws_durable_execution_sdk_python_testing.clock import Clock, RealClock
from aws_durable_execution_sdk_python_testing.exceptions import DurableFunctionsTestError
from aws_durable_execution_sdk_python_testing.execution import ExecutionStatus
from aws_durable_execution_sdk_python_testing.executor import Executor
from aws_durable_execution_sdk_python_testing.invoker import InvokeResponse, LambdaInvoker
from aws_durable_execution_sdk_python_testing.model import StartDurableExecutionInput
from aws_durable_execution_sdk_python_testing.scheduler import Scheduler
from aws_durable_execution_sdk_python_testing.stores.memory import InMemoryExecutionStore
from aws_durable_execution_sdk_python_testing.web.server import WebServer, WebServiceConfig
from aws_durable_execution_sdk_python_testing.worker.registry import ExecutionRegistry

from stratus.emulator.event_queue import invoke_once
from stratus.emulator.intrinsics import ACCOUNT_ID

if TYPE_CHECKING:
    from collections.abc import Mapping

    from aws_durable_execution_sdk_python.execution import DurableExecutionInvocationInput

    from stratus.emulator.containers import FunctionPool
    from stratus.emulator.dead_letters import DeadLetters


class ScaledClock:
    """The service's clock, running `1 / scale` times faster than real time: a modelled duration D passes in
    `D * scale` real seconds (`Options.durable_time_scale`)."""

    def __init__(self, scale: float) -> None:
        self.scale = scale
        self._started = datetime.datetime.now(datetime.UTC)
        self._real = time.monotonic()

    def now(self) -> datetime.datetime:
        return self._started + datetime.timedelta(seconds=(time.monotonic() - self._real) / self.scale)

    def arm(self, wake: datetime.datetime) -> float:
        """The real seconds to wait before `wake`, on this clock."""
        return max((wake - self.now()).total_seconds(), 0.0) * self.scale


class AlreadyStartedError(Exception):
    """An execution of the function already has that name."""


class PoolInvoker(LambdaInvoker):
    """Invokes a durable function's handler as one invocation of its pool, on the emulator's loop."""

    def __init__(self, pools: Mapping[str, FunctionPool], loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(lambda_client=None)
        self.pools = pools
        self.loop = loop

    def invoke(
        self,
        function_name: str,
        input: DurableExecutionInvocationInput,
        endpoint_url: str | None = None,
        tenant_id: str | None = None,
        account_id: str | None = None,
        region_name: str | None = None,
    ) -> InvokeResponse:
        pool = self.pools.get(function_name.split(":")[0])
        if pool is None:
            raise DurableFunctionsTestError(f"Function not found: {function_name}")
        running = asyncio.run_coroutine_threadsafe(invoke_once(pool, input.to_json_dict(), queue=True), self.loop)
        payload, error = running.result(timeout=pool.function.timeout_seconds + 60)
        if error:  # a crash or a timeout: the service invokes again, and the replay decides what runs
            raise DurableFunctionsTestError(f"Lambda invocation failed: {json.dumps(payload)[:500]}")
        return InvokeResponse.from_payload(json.dumps(payload).encode(), pool.function.name)


WATCH_SECONDS = 0.5
"""How often an execution's record is read to learn it ended."""
_DEAD = (ExecutionStatus.FAILED, ExecutionStatus.STOPPED, ExecutionStatus.TIMED_OUT)


class DurableService:
    """The local durable execution service, serving its API on 127.0.0.1 (`url`) until `close`."""

    def __init__(
        self,
        pools: Mapping[str, FunctionPool],
        loop: asyncio.AbstractEventLoop,
        region: str,
        *,
        time_scale: float = 1.0,
        dead_letters: DeadLetters | None = None,
    ) -> None:
        self.pools = pools
        self.region = region
        self.time_scale = time_scale
        self.dead_letters = dead_letters
        self._closed = threading.Event()
        self._names: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        self._scheduler = Scheduler()
        self._store = InMemoryExecutionStore()
        clock: Clock = RealClock() if time_scale == 1.0 else ScaledClock(time_scale)
        self._registry = ExecutionRegistry(self._store, self._scheduler)
        checkpoints = CheckpointProcessor(self._store, self._scheduler, clock=clock)
        timeout = max((int(pool.function.timeout_seconds) for pool in pools.values()), default=900)
        self.executor = Executor(
            store=self._store,
            scheduler=self._scheduler,
            invoker=PoolInvoker(pools, loop),
            checkpoint_processor=checkpoints,
            invocation_timeout_seconds=timeout + 60,  # the pool's own timeout ends an invocation first
            registry=self._registry,
            clock=clock,
            child_dispatcher=UnconfiguredChildDispatcher(),
            region=region,
        )
        checkpoints.add_execution_observer(self.executor)
        self._scheduler.start()  # type: ignore[no-untyped-call]
        self._server = WebServer(config=WebServiceConfig(host="127.0.0.1", port=0), executor=self.executor)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._serving = threading.Thread(target=self._server.serve_forever, name="stratus-durable", daemon=True)
        self._serving.start()

    def start(self, pool: FunctionPool, qualifier: str, name: str, payload: Any) -> str:
        """Start an execution of `pool`'s function at `qualifier` named `name` with `payload`; its ARN.

        Raises:
            AlreadyStartedError: the function has an execution of that name.
        """
        assert pool.function.durable is not None
        timeout, retention = pool.function.durable
        if self.time_scale != 1.0:
            timeout = max(1, math.ceil(timeout * self.time_scale))
        with self._lock:
            if (pool.function.name, name) in self._names:
                raise AlreadyStartedError(self._names[(pool.function.name, name)])
            started = self.executor.start_execution(
                StartDurableExecutionInput(
                    account_id=ACCOUNT_ID,
                    function_name=pool.function.name,
                    function_qualifier=qualifier,
                    execution_name=name,
                    execution_timeout_seconds=timeout,
                    execution_retention_period_days=retention,
                    input=json.dumps(payload),
                )
            )
            arn = str(started.execution_arn)
            self._names[(pool.function.name, name)] = arn
        threading.Thread(target=self._watch, args=(pool, arn), name=f"stratus-durable-{name}", daemon=True).start()
        return arn

    def _watch(self, pool: FunctionPool, arn: str) -> None:
        """Once the execution ends, its dead letter if it ended FAILED, STOPPED or TIMED_OUT."""
        # The executor's completion event forgets itself after a wait that timed out: its record is read instead.
        while not (execution := self.executor.get_execution(arn)).is_complete:
            if self._closed.wait(WATCH_SECONDS):
                return
        if self.dead_letters is None or execution.close_status not in _DEAD:
            return
        error = execution.result.error if execution.result is not None else None
        message = (error.message if error is not None else None) or execution.close_status.value
        # ErrorCode: the HTTP status of the failed invocation's answer (200 for a function error).
        self.dead_letters.send(pool.function, execution.start_input.input or "{}", "200", message[:1024])

    def close(self) -> None:
        self._closed.set()
        self._server.shutdown()
        self._server.server_close()
        self.executor.shutdown()
        self._registry.shutdown()
        self._scheduler.stop()  # type: ignore[no-untyped-call]
        self._scheduler._loop.close()  # testing SDK 1.4 stops its scheduler's event loop without closing it
