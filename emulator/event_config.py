"""Each function's asynchronous invocation settings, as its `AWS::Lambda::EventInvokeConfig` sets them (SAM writes
one for a function's `EventInvokeConfig`): how often a failed event is retried, how long an event may wait, and
where the record of a failed or successful one goes
(https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-configuring.html). A function without one has
Lambda's defaults: two retries, six hours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stratus.emulator.intrinsics import Resolver

DEFAULT_RETRY_ATTEMPTS = 2
DEFAULT_EVENT_AGE_SECONDS = 21_600


@dataclass(frozen=True)
class EventInvokeConfig:
    maximum_retry_attempts: int = DEFAULT_RETRY_ATTEMPTS
    maximum_event_age_seconds: float = DEFAULT_EVENT_AGE_SECONDS
    on_failure: str | None = None
    """The destination's ARN for an event that failed every attempt or aged out."""
    on_success: str | None = None


def event_invoke_configs(resolver: Resolver) -> dict[str, EventInvokeConfig]:
    """The stack's asynchronous invocation settings, by function name (those of `$LATEST`, or of no qualifier: the
    emulator serves no versions)."""
    found: dict[str, EventInvokeConfig] = {}
    for logical_id, resource in resolver.resources.items():
        if resource.get("Type") != "AWS::Lambda::EventInvokeConfig" or not resolver.exists(logical_id):
            continue
        properties: dict[str, Any] = resolver.resolve(resource.get("Properties") or {})
        if properties.get("Qualifier", "$LATEST") != "$LATEST":
            continue
        destinations = properties.get("DestinationConfig") or {}
        found[str(properties.get("FunctionName"))] = EventInvokeConfig(
            maximum_retry_attempts=int(properties.get("MaximumRetryAttempts", DEFAULT_RETRY_ATTEMPTS)),
            maximum_event_age_seconds=float(properties.get("MaximumEventAgeInSeconds", DEFAULT_EVENT_AGE_SECONDS)),
            on_failure=_destination(destinations.get("OnFailure")),
            on_success=_destination(destinations.get("OnSuccess")),
        )
    return found


def _destination(value: Any) -> str | None:
    destination = value.get("Destination") if isinstance(value, dict) else None
    return str(destination) if destination else None
