"""The sweeper Lambda, run on a schedule (template.yaml: every 5 minutes by default).

It removes expired sessions and frees their places under the session limit, a bounded slice of the roster per run
(`SessionStore.sweep_step`: the next pages of DynamoDB's sharded roster, resumed from a cursor item; one batch of
Redis's roster by expiry), so a run's cost does not grow with the session count and successive runs reach every
expired session (docs/scale.md). Redis key expiry and DynamoDB TTL
delete session data on their own; the sweep keeps the roster that counts live sessions (for the limit and
`/health`) true between requests that would otherwise sweep on demand, and reports the count as a metric. Stores
are built per invocation, on that invocation's event loop, and closed after it.

It is also the task worker's on-failure destination: given Lambda's record of a task worker launch that failed
(a run that crashed or timed out, or a launch that waited too long to start), it marks that task or relayed call
failed (`stratus.handlers.failed_runs`) instead of sweeping; and it reads the durable task worker's dead-letter queue
(an SQS event source mapping), marking failed the task of each execution that ended without its run's outcome.

Its secrets are read by the container's first invocation and kept (`stratus.handlers.secrets`), waiting out SSM's
throttling for at most `INVOCATION_PATIENCE_SECONDS`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping
from typing import Any

from stratus import Settings
from stratus.composition import stores_for
from stratus.handlers.failed_runs import dead_letters, failed_launch, mark_failed
from stratus.handlers.secrets import INVOCATION_PATIENCE_SECONDS, patience_within, settings_from_env
from stratus.handlers.telemetry import build_telemetry
from stratus.settings import PREFIX

logger = logging.getLogger("stratus.sweeper")


async def sweep(settings: Settings) -> dict[str, int]:
    """Sweep the store `settings` names; how many sessions were removed and how many are live."""
    stores = stores_for(settings)
    try:
        removed = await stores.sessions.sweep_step()
        census = await stores.sessions.census()
    finally:
        await stores.aclose()
    return {"swept": removed, "activeSessions": census.active}


def without_auth(environ: Mapping[str, str]) -> dict[str, str]:
    """The sweeper's settings: the functions' shared environment without the auth settings, which no sweep uses. An
    AuthAudience left for the documented second deploy then does not fail every scheduled sweep, and the front's
    client secret is not read from SSM."""
    return {key: value for key, value in environ.items() if not key.startswith(f"{PREFIX}AUTH_")}


def handler(event: Any, context: Any) -> dict[str, int]:
    """The scheduled event's entry point (the event itself carries nothing the sweep needs), the task worker's
    on-failure destination's and the durable task worker's dead-letter queue's (`{"markedFailed": n}`: how many runs
    the record or the batch moved to failed)."""
    settings = settings_from_env(
        without_auth(os.environ), patience=patience_within(context, INVOCATION_PATIENCE_SECONDS)
    )
    metrics, flush = build_telemetry(settings, "stratus-sweeper")
    launch = failed_launch(event)
    launches = [launch] if launch is not None else dead_letters(event)
    if launches is not None:
        marked = sum(int(asyncio.run(mark_failed(settings, each))) for each in launches)
        metrics.count("task_runs_failed", marked)
        flush()
        return {"markedFailed": marked}
    outcome = asyncio.run(sweep(settings))
    metrics.count("sessions_swept", outcome["swept"])
    metrics.count("sessions_active", outcome["activeSessions"])
    flush()
    logger.info("swept %d expired sessions; %d live", outcome["swept"], outcome["activeSessions"])
    return outcome
