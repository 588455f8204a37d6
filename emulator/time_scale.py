"""A stack's time limits scaled, so a test sees a call outlive a limit without waiting it out
(`stratus.emulator.local_aws.Options.time_scale`)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stratus.emulator.stack import Stack


def with_time_scale(stack: Stack, factor: float) -> Stack:
    """`stack` with its time limits (function timeouts, integration timeouts, asynchronous events' maximum age)
    multiplied by `factor`: a test sees a call outlive a 30 s limit without waiting 30 s."""
    if factor == 1.0:
        return stack

    def ms(value: int) -> int:
        return max(1, round(value * factor))

    return replace(
        stack,
        functions={
            name: replace(function, timeout_seconds=function.timeout_seconds * factor)
            for name, function in stack.functions.items()
        },
        http_apis=tuple(
            replace(api, routes=tuple(replace(route, timeout_ms=ms(route.timeout_ms)) for route in api.routes))
            for api in stack.http_apis
        ),
        rest_apis=tuple(
            replace(api, methods=tuple(replace(method, timeout_ms=ms(method.timeout_ms)) for method in api.methods))
            for api in stack.rest_apis
        ),
        event_configs={
            name: replace(config, maximum_event_age_seconds=config.maximum_event_age_seconds * factor)
            for name, config in stack.event_configs.items()
        },
    )
