"""Protocol revisions Stratus speaks, and how a request picks one.

The stateless revision (2026-07-28) carries the version in every request's `_meta`; handshake-era revisions
(2024-11-05 to 2025-11-25) negotiate it once with `initialize` and keep it in a session.
"""

from __future__ import annotations

STATELESS_VERSIONS: tuple[str, ...] = ("2026-07-28",)
HANDSHAKE_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SUPPORTED_VERSIONS: tuple[str, ...] = STATELESS_VERSIONS + HANDSHAKE_VERSIONS

LATEST_HANDSHAKE = HANDSHAKE_VERSIONS[0]
# The only revision that allowed JSON-RPC batches.
BATCH_VERSION = "2025-03-26"
# From this revision on, a tool's input-validation failure is a tool result with isError, not -32602.
INPUT_ERRORS_AS_RESULTS_SINCE = "2025-11-25"

# From this revision on, a resumable SSE stream starts with a priming event (an id and empty data) and `retry:`.
PRIMING_SINCE = "2025-11-25"

PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TASKS_SINCE = "2025-11-25"
"""The first handshake-era revision with (experimental) tasks."""
CLIENT_INFO_META = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_META = "io.modelcontextprotocol/logLevel"
SERVER_INFO_META = "io.modelcontextprotocol/serverInfo"


def is_stateless(version: str) -> bool:
    """Whether `version` is a per-request-metadata (stateless) revision."""
    return version in STATELESS_VERSIONS


def negotiate_handshake(requested: object) -> str:
    """The version to answer an `initialize` with: the requested one when we speak it, else the latest."""
    if isinstance(requested, str) and requested in HANDSHAKE_VERSIONS:
        return requested
    return LATEST_HANDSHAKE


def at_least(version: str, minimum: str) -> bool:
    """Whether `version` is `minimum` or newer (revisions are ISO dates, so they sort as strings)."""
    return version >= minimum
