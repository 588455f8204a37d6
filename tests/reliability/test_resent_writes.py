"""Writes whose answer the network lost, sent again by the store's client, against the real servers.

DynamoDB (moto's server): a botocore `before-send` hook sends the request to the server itself, so the write is
applied, then raises the error a lost answer gives (`ReadTimeoutError`, `ConnectionClosedError`); botocore's own
standard-mode retry sends the same request again and the server answers it. Redis (the real redis-server): a redis-py
connection reads the answer to the armed script, throws it away and drops (`ConnectionError`); redis-py's retry
sends the whole pipeline again on a new connection. Each write must end in success (or its documented refusal when
another writer got there first) and leave exactly one copy of what it wrote.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import anyio
import httpx
import pytest
from botocore.awsrequest import AWSPreparedRequest, AWSResponse
from botocore.exceptions import ConnectionClosedError, ReadTimeoutError
from botocore.httpsession import URLLib3Session
from redis.asyncio import Connection
from redis.exceptions import ConnectionError as RedisConnectionError

from stratus import McpServer, Settings, build_app
from stratus.errors import STORE_UNAVAILABLE, PrincipalSessionsFullError
from stratus.stores.base import StoreOptions, Stores
from stratus.stores.dynamodb.builder import dynamodb_stores
from stratus.stores.dynamodb.client import dynamodb_client
from stratus.stores.dynamodb.schema import create_table
from stratus.stores.records import SessionExistsError, SessionRecord, TaskExistsError, TaskRecord
from stratus.stores.redis import lua
from stratus.stores.redis.builder import redis_stores
from stratus.stores.redis.client import redis_client
from stratus.stores.task_records import TaskOutcome
from tests.fixtures.dynamodb_wire import JSON_1_0, Body
from tests.fixtures.store_backends import ADD, REDIS_URL

pytestmark = pytest.mark.anyio
TIMEOUT = 2.0
QUOTA = 2
WRITES = {
    # write: (the DynamoDB operation that carries it, the Redis script that carries it: the last of its pipeline)
    "session create": ("TransactWriteItems", "session_create"),
    "session delete": ("TransactWriteItems", "roster_forget"),
    "event append": ("UpdateItem", "event_append"),
    "pending deliver": ("UpdateItem", "pending_deliver"),
    "task create": ("PutItem", "task_create"),
    "task update": ("UpdateItem", "task_update"),
    "cache claim": ("PutItem", "cache_claim"),
}


def _operation(request: AWSPreparedRequest) -> str:
    target = request.headers.get("X-Amz-Target", b"")
    return (target.decode() if isinstance(target, bytes) else target).rpartition(".")[2]


class LostAnswers:
    """A botocore `before-send` hook, by operation: the next request of an operation armed with `lose` is applied by
    the server but its answer never arrives (`error`); the error codes armed with `then` answer the requests of that
    operation that follow (botocore's resends), in place of the server."""

    def __init__(self, error: Callable[..., Exception] = ReadTimeoutError) -> None:
        self.http = URLLib3Session()
        self.error = error
        self.plans: dict[str, list[str]] = {}
        self.sent: Counter[str] = Counter()
        self.tokens: list[str] = []
        """The ClientRequestToken of every TransactWriteItems sent."""

    def lose(self, operation: str, *, then: tuple[str, ...] = ()) -> None:
        self.plans[operation] = ["lose", *then]
        self.sent[operation] = 0

    def lost(self) -> bool:
        return not any(plan and plan[0] == "lose" for plan in self.plans.values())

    def __call__(self, request: AWSPreparedRequest, **kwargs: Any) -> AWSResponse | None:
        operation = _operation(request)
        self.sent[operation] += 1
        if operation == "TransactWriteItems":
            self.tokens.append(json.loads(request.body)["ClientRequestToken"])
        plan = self.plans.get(operation)
        if not plan:
            return None
        step = plan.pop(0)
        if step != "lose":
            error = {"__type": f"com.amazonaws.dynamodb.v20120810#{step}", "message": "injected"}
            return AWSResponse(request.url, 400, JSON_1_0, Body(json.dumps(error).encode()))
        answer = self.http.send(request)  # applied by the server ...
        assert answer.status_code == 200, answer.content
        raise self.error(endpoint_url=request.url, error="the answer was lost")  # ... and its answer lost


class AnswerLosingConnection(Connection):
    """A real redis-py connection over which the network loses one answer: the pipeline holding an armed script
    runs on the server, the answer to that script is read and thrown away, and the connection drops."""

    armed: ClassVar[set[bytes]] = set()
    sent: ClassVar[Counter[bytes]] = Counter()

    lose_at = 0

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        chunks = [command] if isinstance(command, bytes | str) else command
        data = b"".join(chunk.encode() if isinstance(chunk, str) else bytes(chunk) for chunk in chunks)
        for sha in SHAS.values():
            if sha in data:
                AnswerLosingConnection.sent[sha] += 1
                if sha in self.armed:
                    self.armed.discard(sha)
                    self.lose_at = data[: data.index(sha)].count(b"\r\nEVALSHA\r\n")  # its answer's place
        await super().send_packed_command(command, check_health)

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        response = await super().read_response(*args, **kwargs)
        if self.lose_at:
            self.lose_at -= 1
            if not self.lose_at:
                await self.disconnect()
                raise RedisConnectionError("the answer was lost")
        return response


SHAS = {name: hashlib.sha1(source.encode()).hexdigest().encode() for name, source in lua.ALL.items()}


@dataclass
class Lossy:
    """Stores over a network that loses the answer to the next write armed with `lose`."""

    name: str
    stores: Stores
    hook: LostAnswers | None = None
    carriers: list[str] = field(default_factory=list)

    def lose(self, write: str) -> None:
        operation, script = WRITES[write]
        if self.hook is not None:
            self.hook.lose(operation)
            self.carriers.append(operation)
        else:
            AnswerLosingConnection.armed.add(SHAS[script])
            AnswerLosingConnection.sent[SHAS[script]] = 0
            self.carriers.append(script)

    def sent(self) -> int:
        """How many times the last armed write's carrier went out since it was armed (2: once, then again by the
        client's retry)."""
        if self.hook is not None:
            return self.hook.sent[self.carriers[-1]]
        return AnswerLosingConnection.sent[SHAS[self.carriers[-1]]]

    def lost(self) -> bool:
        """Whether the armed answer was lost (the write reached the server)."""
        if self.hook is not None:
            return self.hook.lost()
        return not AnswerLosingConnection.armed


@pytest.fixture
def dynamodb_table(moto_server: str, aws_credentials: None, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", moto_server)
    client = dynamodb_client(timeout=TIMEOUT)
    table = f"resent-{secrets.token_hex(4)}"
    create_table(client, table)
    try:
        yield client, table
    finally:
        client.delete_table(TableName=table)


@pytest.fixture(params=["dynamodb", "redis"])
async def lossy(request: pytest.FixtureRequest) -> AsyncIterator[Lossy]:
    limits: dict[str, Any] = {
        "session_ttl_seconds": 600.0,
        "timeout": TIMEOUT,
        "max_sessions": 10,
        "max_sessions_per_principal": QUOTA,
    }
    if request.param == "dynamodb":
        client, table = request.getfixturevalue("dynamodb_table")
        hook = LostAnswers()
        client.meta.events.register("before-send.dynamodb", hook)
        try:
            yield Lossy("dynamodb", dynamodb_stores(client, table, StoreOptions(prefix="r", **limits)), hook)
        finally:
            client.meta.events.unregister("before-send.dynamodb", hook)
        return
    client = redis_client(REDIS_URL, timeout=TIMEOUT)  # the client Stratus runs with: one retry after a drop
    client.connection_pool.connection_class = AnswerLosingConnection
    for source in lua.ALL.values():  # loaded first: a NOSCRIPT answer would hide the resend
        await client.script_load(source)
    prefix = f"resent-{secrets.token_hex(4)}"
    AnswerLosingConnection.armed.clear()
    AnswerLosingConnection.sent.clear()
    try:
        yield Lossy("redis", redis_stores(client, StoreOptions(prefix=prefix, **limits)))
    finally:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
        await client.aclose()


def session(name: str, principal: str | None = None) -> SessionRecord:
    return SessionRecord(session_id=name, protocol_version="2025-11-25", principal=principal)


def assert_resent(lossy: Lossy) -> None:
    assert lossy.lost(), "the armed write never went out"
    assert lossy.sent() == 2, "the client did not send the write again"


async def test_a_session_create_whose_answer_was_lost_is_a_200_and_takes_one_place(lossy: Lossy) -> None:
    app = build_app(McpServer("resent"), Settings(max_sessions=10), stores=lossy.stores)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://localhost") as http:
        lossy.lose("session create")
        created = await http.post("/session", headers={"content-type": "application/json"})
        assert_resent(lossy)
        assert created.status_code == 200, created.text
        session_id = created.json()["sessionId"]
        assert await lossy.stores.sessions.load(session_id) is not None
        assert (await lossy.stores.sessions.census()).active == 1


async def test_a_resent_session_create_counts_once_toward_its_principals_quota(lossy: Lossy) -> None:
    lossy.lose("session create")
    await lossy.stores.sessions.create(session("first", "alice"))
    assert_resent(lossy)
    await lossy.stores.sessions.create(session("second", "alice"))  # the quota (2) has room for one more
    with pytest.raises(PrincipalSessionsFullError):
        await lossy.stores.sessions.create(session("third", "alice"))
    assert (await lossy.stores.sessions.census()).active == 2


async def test_a_session_id_another_create_holds_is_a_503_to_retry_never_a_500(lossy: Lossy) -> None:
    await lossy.stores.sessions.create(session("taken"))
    with pytest.raises(SessionExistsError) as clash:
        await lossy.stores.sessions.create(session("taken"))
    assert (clash.value.http_status, clash.value.code) == (503, STORE_UNAVAILABLE)
    assert "taken" not in clash.value.message  # the id is not the client's to see
    assert (await lossy.stores.sessions.census()).active == 1


async def test_a_session_delete_whose_answer_was_lost_reports_it_ended_and_frees_its_place_once(
    lossy: Lossy,
) -> None:
    for name in ("kept", "ended"):
        await lossy.stores.sessions.create(session(name, "alice"))
    lossy.lose("session delete")
    assert await lossy.stores.sessions.delete("ended") is True
    assert_resent(lossy)
    assert await lossy.stores.sessions.load("ended") is None
    assert await lossy.stores.sessions.delete("ended") is False  # a second, separate delete finds it gone
    assert (await lossy.stores.sessions.census()).active == 1
    await lossy.stores.sessions.create(session("again", "alice"))  # alice's place was freed exactly once
    with pytest.raises(PrincipalSessionsFullError):
        await lossy.stores.sessions.create(session("too-many", "alice"))


async def test_an_event_append_whose_answer_was_lost_is_numbered_and_kept_once(lossy: Lossy) -> None:
    events = lossy.stores.events
    lossy.lose("event append")
    assert await events.append("s", "first") == 1
    assert_resent(lossy)
    assert await events.append("s", "second") == 2
    assert [(event.seq, event.data) for event in await events.read_after("s", 0)] == [(1, "first"), (2, "second")]


async def test_a_reply_whose_delivery_answer_was_lost_is_delivered_once(lossy: Lossy) -> None:
    pending = lossy.stores.pending
    await pending.open("session-1/req-1", ttl_seconds=30)
    lossy.lose("pending deliver")
    assert await pending.deliver("session-1/req-1", '{"result": 1}') is True
    assert_resent(lossy)
    assert await pending.deliver("session-1/req-1", '{"result": 2}') is False  # another reply: refused
    with anyio.fail_after(5):
        assert await pending.wait("session-1/req-1", within=5) == '{"result": 1}'


async def test_a_task_create_whose_answer_was_lost_stores_the_task_once(lossy: Lossy) -> None:
    tasks = lossy.stores.tasks
    lossy.lose("task create")
    await tasks.create(TaskRecord(task_id="t-1", principal="alice", status="working", request=ADD), ttl_seconds=60)
    assert_resent(lossy)
    stored = await tasks.get("t-1")
    assert stored is not None and (stored.principal, stored.status) == ("alice", "working")
    with pytest.raises(TaskExistsError) as clash:  # another create of the same id is refused: 503, never 500
        await tasks.create(TaskRecord(task_id="t-1", principal="bob", status="working", request=ADD), ttl_seconds=60)
    assert (clash.value.http_status, clash.value.code) == (503, STORE_UNAVAILABLE)


async def test_a_task_move_whose_answer_was_lost_reports_it_moved(lossy: Lossy) -> None:
    tasks = lossy.stores.tasks
    await tasks.create(TaskRecord(task_id="t-1", principal=None, status="working", request=ADD), ttl_seconds=60)
    lossy.lose("task update")
    done = TaskOutcome(result={"ok": 1})
    assert await tasks.update("t-1", status="completed", outcome=done, expect=("working",)) is True
    assert_resent(lossy)
    assert await tasks.update("t-1", status="cancelled", outcome=None, expect=("working",)) is False
    stored = await tasks.get("t-1")
    assert stored is not None and (stored.status, stored.outcome) == ("completed", done)


async def test_a_claim_whose_answer_was_lost_is_held_by_its_claimant_only(lossy: Lossy) -> None:
    cache = lossy.stores.cache
    lossy.lose("cache claim")
    assert await cache.claim("mrtr:nonce-1", ttl_seconds=60) is True
    assert_resent(lossy)
    assert await cache.claim("mrtr:nonce-1", ttl_seconds=60) is False


async def test_a_dropped_connection_after_a_session_create_is_resent_and_counted_once(
    dynamodb_table: tuple[Any, str],
) -> None:
    client, table = dynamodb_table
    hook = LostAnswers(ConnectionClosedError)
    client.meta.events.register("before-send.dynamodb", hook)
    # Under a session limit a create is one transaction (with none it is plain puts: no count to keep).
    stores = dynamodb_stores(
        client, table, StoreOptions(prefix="r", session_ttl_seconds=600, timeout=TIMEOUT, max_sessions=10)
    )
    hook.lose("TransactWriteItems")
    await stores.sessions.create(session("s-1"))
    assert hook.sent["TransactWriteItems"] == 2
    assert hook.tokens[0] == hook.tokens[1]  # botocore's resend is the same request, token and all
    assert (await stores.sessions.census()).active == 1


async def test_a_resent_transaction_found_still_in_progress_is_asked_again_with_its_token(
    dynamodb_table: tuple[Any, str],
) -> None:
    """DynamoDB answers a resend that arrives while the first request with its token is still being applied with
    TransactionInProgressException. botocore's own attempts (three: `max_attempts` counts retries) are spent on
    the lost answer and two such answers; Stratus then asks once more with the same token."""
    client, table = dynamodb_table
    hook = LostAnswers()
    client.meta.events.register("before-send.dynamodb", hook)
    stores = dynamodb_stores(
        client, table, StoreOptions(prefix="r", session_ttl_seconds=600, timeout=TIMEOUT, max_sessions=10)
    )
    in_progress = "TransactionInProgressException"
    hook.lose("TransactWriteItems", then=(in_progress, in_progress))
    await stores.sessions.create(session("s-1"))
    assert hook.sent["TransactWriteItems"] == 4
    assert len(set(hook.tokens)) == 1
    assert (await stores.sessions.census()).active == 1
