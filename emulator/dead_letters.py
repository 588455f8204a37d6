"""Dead-letter queues and the SQS event source mappings that read them, for the durable task worker: a durable
execution that ends FAILED, STOPPED or TIMED_OUT sends its input event to its function's dead-letter queue (durable
functions have no destinations: https://docs.aws.amazon.com/lambda/latest/dg/durable-best-practices.html), and the
queue's event source mapping hands the message to its function as an SQS batch
(https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html).

What it models:
- the queue: a function's `DeadLetterConfig.TargetArn` (SAM's `DeadLetterQueue`); the message's body is the event,
  its attributes `RequestID`, `ErrorCode` and `ErrorMessage`
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-retain-records.html);
- the permissions, from the roles: Lambda sends with the function's execution role (`sqs:SendMessage` on the
  queue), and the mapping polls with its function's (`sqs:ReceiveMessage`, https://docs.aws.amazon.com/lambda/
  latest/dg/with-sqs.html); a send the role does not allow loses the message, as Lambda does (it counts it in the
  `DeadLetterErrors` metric), and the emulator says so in its log;
- the mapping: one message a batch, delivered at once; a batch whose invocation fails is delivered again, up to
  `DELIVERIES` times here (SQS would keep it, visible again after the queue's visibility timeout, until its
  retention ends).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from stratus.emulator.event_queue import invoke_once
from stratus.emulator.iam import check

if TYPE_CHECKING:
    from stratus.emulator.containers import FunctionPool
    from stratus.emulator.sqs_mappings import QueueReader
    from stratus.emulator.stack import Function

logger = logging.getLogger("stratus.emulator")
DELIVERIES = 3


def sqs_batch(queue_arn: str, body: str, attributes: Mapping[str, str]) -> dict[str, Any]:
    """The event an SQS event source mapping invokes its function with, for one message."""
    now = int(time.time() * 1000)
    return {
        "Records": [
            {
                "messageId": str(uuid.uuid4()),
                "receiptHandle": uuid.uuid4().hex,
                "body": body,
                "attributes": {
                    "ApproximateReceiveCount": "1",
                    "SentTimestamp": str(now),
                    "ApproximateFirstReceiveTimestamp": str(now),
                },
                "messageAttributes": {
                    name: {"stringValue": value, "dataType": "Number" if value.isdigit() else "String"}
                    for name, value in attributes.items()
                },
                "md5OfBody": hashlib.md5(body.encode(), usedforsecurity=False).hexdigest(),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": queue_arn.split(":")[3],
            }
        ]
    }


class DeadLetters:
    """Sends a function's failed events to its dead-letter queue, whose mapping delivers them."""

    def __init__(
        self,
        queues: Mapping[str, str],
        readers: Mapping[str, QueueReader],
        pools: Mapping[str, FunctionPool],
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self.queues = queues
        self.readers = readers
        self.pools = pools
        self.loop = loop

    def send(self, function: Function, body: str, error_code: str, error_message: str) -> None:
        """From any thread: the event `body` of `function`, failed with `error_code`, to its queue."""
        queue = self.queues.get(function.name)
        if queue is None:
            return
        if function.role is not None and (refusal := check(function.role, function.name, "sqs:SendMessage", [queue])):
            logger.warning("%s: the dead letter is lost (DeadLetterErrors): %s", function.name, refusal)
            return
        attributes = {"RequestID": str(uuid.uuid4()), "ErrorCode": error_code, "ErrorMessage": error_message}
        asyncio.run_coroutine_threadsafe(self._deliver(queue, sqs_batch(queue, body, attributes)), self.loop)

    async def _deliver(self, queue: str, batch: dict[str, Any]) -> None:
        reader = self.readers.get(queue)
        pool = self.pools.get(reader.function) if reader is not None else None
        if pool is None:
            logger.warning("%s: a message waits in the queue, which no function reads", queue)
            return
        role = pool.function.role
        if role is not None and (refusal := check(role, pool.function.name, "sqs:ReceiveMessage", [queue])):
            logger.warning("%s: its event source mapping cannot read the queue: %s", pool.function.name, refusal)
            return
        for _ in range(DELIVERIES):
            payload, failed = await invoke_once(pool, batch, queue=True)
            if not failed:
                return
            logger.warning("%s: an SQS batch failed: %s", pool.function.name, json.dumps(payload)[:300])
        logger.warning("%s: a message stays in the queue after %d deliveries", queue, DELIVERIES)
