"""Fixtures of the Lambda handler tests."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from stratus.handlers.invocation import ContainerLoop
from stratus.handlers.secrets import forget_secrets


@pytest.fixture(autouse=True)
def fresh_secrets() -> Iterator[None]:
    """Each test is a fresh container as far as secrets go: what an earlier test read is not kept."""
    forget_secrets()
    yield
    forget_secrets()


@pytest.fixture(scope="module")
def container_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """The event loop of one Lambda container: set before the handler is built, closed when the module ends."""
    loop = ContainerLoop()
    asyncio.set_event_loop(loop)
    yield loop
    asyncio.set_event_loop(None)
    loop.close()
