"""The stack's SQS wiring, as its template declares it: each function's dead-letter queue (`DeadLetterConfig`, which
SAM writes for a function's `DeadLetterQueue`) and the event source mappings that read queues
(`AWS::Lambda::EventSourceMapping`, https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html). `dead_letters`
delivers through them.
"""

from __future__ import annotations

from dataclasses import dataclass

from stratus.emulator.intrinsics import Resolver


@dataclass(frozen=True)
class QueueReader:
    """An SQS event source mapping: the function it invokes with the queue's messages."""

    function: str
    batch_size: int = 10


def dead_letter_queues(resolver: Resolver) -> dict[str, str]:
    """Each function's dead-letter queue ARN, by function name (those that have one)."""
    found: dict[str, str] = {}
    for logical_id in resolver.created("AWS::Lambda::Function"):
        properties = resolver.properties(logical_id)
        target = (properties.get("DeadLetterConfig") or {}).get("TargetArn")
        if isinstance(target, str) and target.startswith("arn:aws:sqs:"):
            found[str(resolver.ref(logical_id))] = target
    return found


def queue_readers(resolver: Resolver) -> dict[str, QueueReader]:
    """The stack's SQS event source mappings, by queue ARN."""
    found: dict[str, QueueReader] = {}
    for logical_id in resolver.created("AWS::Lambda::EventSourceMapping"):
        properties = resolver.properties(logical_id)
        source = str(properties.get("EventSourceArn", ""))
        if source.startswith("arn:aws:sqs:") and properties.get("Enabled", True) is not False:
            name = str(properties.get("FunctionName", "")).rsplit(":function:", 1)[-1].split(":")[0]
            found[source] = QueueReader(name, int(properties.get("BatchSize", 10)))
    return found
