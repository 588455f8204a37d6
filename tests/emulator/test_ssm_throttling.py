"""A burst of tasks through the stack template.yaml describes, with Parameter Store throttled: every task completes,
and no container reads its secret twice.

The secret key is an SSM reference (`STRATUS_SECRET_KEY=ssm:/stratus/secret-key`, in moto's SSM behind the
emulator's checked endpoint), and the emulated SSM answers reads past its throughput with `ThrottlingException`, as
Parameter Store does past its standard 40 a second. On AWS the issue's burst is 200 task launches at 40 a second,
each launch possibly a cold task worker: five seconds of reads. Here the containers are processes on a shared
machine, so a function has at most `CONTAINERS` of them, and the throughput is lowered to `SSM_TPS` so that their
cold starts alone outrun it as hundreds of AWS cold starts outrun 40 a second: the first read of each second is
served, the others are throttled and retried. `TASKS` are launched at once; a buffered container whose reads are
still throttled when its start's patience ends answers 503 with `Retry-After`, and the launch is sent again after
it, as a client does.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterator
from typing import Any

import anyio
import boto3
import httpx
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError

from stratus.emulator.command import add_parser
from stratus.emulator.local_aws import LocalAws
from stratus.emulator.throughput import SSM_STANDARD_TPS, Throughput
from tests.fixtures.clocks import FakeClock
from tests.fixtures.emulated_stack import HEADERS, TEMPLATE, VERSION, initialize, serving
from tests.fixtures.keys import SECRET_KEY
from tests.fixtures.moto_server import SerialMotoServer, client_keys

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]

TASKS = 200
CONTAINERS = 3
SSM_TPS = 1.0
WAIT_SECONDS = 170.0
SECRET_PARAMETER = "/stratus/secret-key"
TASK_WORKER = "TaskWorkerFunction"


@pytest.fixture(scope="module")
def aws() -> Iterator[LocalAws]:
    server = SerialMotoServer()
    endpoint = server.start()
    try:
        ssm = boto3.client("ssm", endpoint_url=endpoint, region_name="us-east-1", **client_keys())
        ssm.put_parameter(Name=SECRET_PARAMETER, Value=SECRET_KEY, Type="SecureString", Overwrite=True)
        environment = {
            "STRATUS_SECRET_KEY": f"ssm:{SECRET_PARAMETER}",
            "AWS_ENDPOINT_URL_SSM": endpoint,
            "STRATUS_MAX_TASKS_PER_PRINCIPAL": "0",
        }
        with serving(TEMPLATE, containers=CONTAINERS, environment=environment, ssm_tps=SSM_TPS) as served:
            yield served
    finally:
        server.stop()


async def _post(http: httpx.AsyncClient, url: str, headers: dict[str, str], method: str, params: Any) -> Any:
    """The JSON-RPC answer, sent again after `Retry-After` while the function answers 503 (its secret deferred)."""
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    while True:
        response = await http.post(url, json=message, headers=headers)
        if response.status_code != 503:
            break
        await anyio.sleep(float(response.headers["retry-after"]))
    assert response.status_code == 200, response.text
    return response.json()


async def test_a_burst_of_tasks_completes_under_ssm_throttling_and_no_container_reads_its_secret_twice(
    aws: LocalAws,
) -> None:
    url = f"{aws.url('ServerlessHttpApi')}/mcp"
    with anyio.fail_after(WAIT_SECONDS):
        # A connection each: a kept-alive one can be closed by the door's server (idle while others were queued) just
        # as it is reused.
        limits = httpx.Limits(max_connections=TASKS, max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=WAIT_SECONDS, limits=limits) as http:
            session = await initialize(http, url)
            headers = {**HEADERS, "mcp-session-id": session, "mcp-protocol-version": VERSION}
            task_ids: list[str] = []

            async def launch() -> None:
                created = await _post(http, url, headers, "tools/call", {"name": "where", "arguments": {}, "task": {}})
                task_ids.append(created["result"]["task"]["taskId"])

            async with anyio.create_task_group() as launches:
                for _ in range(TASKS):
                    launches.start_soon(launch)
            statuses: dict[str, str] = dict.fromkeys(task_ids, "working")

            async def poll(task_id: str) -> None:
                answer = await _post(http, url, headers, "tasks/get", {"taskId": task_id})
                statuses[task_id] = answer["result"]["status"]

            while any(status == "working" for status in statuses.values()):
                async with anyio.create_task_group() as polls:
                    for task_id, status in statuses.items():
                        if status == "working":
                            polls.start_soon(poll, task_id)
                await anyio.sleep(0.2)
    assert Counter(statuses.values()) == {"completed": TASKS}

    reads = [call for call in aws.calls.calls if call.action == "ssm:GetParameter"]
    answered = Counter((call.container, call.resources) for call in reads if call.allowed and not call.throttled)
    assert answered and max(answered.values()) == 1  # every container read its secret once
    assert any(call.throttled for call in reads)  # ...though SSM throttled some reads
    assert aws.calls.denied() == []
    worker = next(pool for pool in aws.pools.values() if pool.function.logical_id == TASK_WORKER)
    worker_containers = {call.container for call in reads if call.function == worker.function.name}
    assert len(worker_containers) == worker.cold_starts  # each task worker container read once, then ran its tasks


async def test_a_read_past_the_throughput_is_answered_as_ssm_throttles_as_botocore_reads_it(aws: LocalAws) -> None:
    """Three reads at once through the emulated SSM, as a new task worker container makes them (its environment: its
    key, the emulator's SSM endpoint): at one a second, a later one is 400 `ThrottlingException`, which botocore (its
    own retries off) raises as such."""
    worker = next(function for function in aws.stack.functions.values() if function.logical_id == TASK_WORKER)
    container = aws.environment(worker)
    ssm = boto3.client(
        "ssm",
        endpoint_url=container["AWS_ENDPOINT_URL_SSM"],
        region_name=aws.stack.region,
        aws_access_key_id=container["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=container["AWS_SECRET_ACCESS_KEY"],
        aws_session_token=container["AWS_SESSION_TOKEN"],
        config=Config(retries={"mode": "standard", "total_max_attempts": 1}),
    )
    outcomes: list[str] = []
    for _ in range(3):
        try:
            await anyio.to_thread.run_sync(lambda: ssm.get_parameter(Name=SECRET_PARAMETER, WithDecryption=True))
            outcomes.append("read")
        except ClientError as error:
            outcomes.append(f"{error.response['ResponseMetadata']['HTTPStatusCode']} {error.response['Error']['Code']}")
    assert "400 ThrottlingException" in outcomes
    mine = [call for call in aws.calls.calls if call.container == container["AWS_ACCESS_KEY_ID"]]
    assert [call.throttled for call in mine] == [outcome != "read" for outcome in outcomes]


def test_the_throughput_admits_a_seconds_worth_at_once_then_its_rate() -> None:
    clock = FakeClock()
    throughput = Throughput(2.0, monotonic=clock)
    assert [throughput.admits() for _ in range(3)] == [True, True, False]
    clock.advance(0.5)
    assert [throughput.admits() for _ in range(2)] == [True, False]
    clock.advance(10.0)
    assert [throughput.admits() for _ in range(3)] == [True, True, False]  # never more than a second's worth


def test_stratus_local_takes_the_ssm_throughput_and_defaults_to_the_documented_rate() -> None:
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    assert parser.parse_args(["local"]).ssm_tps == SSM_STANDARD_TPS == 40.0
    assert parser.parse_args(["local", "--ssm-tps", "2.5"]).ssm_tps == 2.5
    with pytest.raises(SystemExit):
        parser.parse_args(["local", "--ssm-tps", "-1"])
