"""Stratus: MCP servers on AWS Lambda, both protocol eras, state outside the process."""

from stratus.resilience.breaker import BreakerPolicy
from stratus.resilience.limiter import RateLimit
from stratus.server.content import (
    Audio,
    BlobResource,
    EmbeddedResource,
    Image,
    ResourceLink,
    Text,
    TextResource,
    ToolResult,
)
from stratus.server.context import Context
from stratus.server.policy import RateLimits, RetryPolicy
from stratus.server.principal import Principal
from stratus.server.prompts import Message, assistant, user
from stratus.server.server import McpServer
from stratus.server.tools import ToolError
from stratus.settings import Settings
from stratus.transport.app import build_app
from stratus.version import __version__ as __version__

__all__ = [
    "Audio",
    "BreakerPolicy",
    "BlobResource",
    "Context",
    "EmbeddedResource",
    "Image",
    "McpServer",
    "Message",
    "Principal",
    "RateLimit",
    "RateLimits",
    "ResourceLink",
    "RetryPolicy",
    "Settings",
    "Text",
    "TextResource",
    "ToolError",
    "ToolResult",
    "assistant",
    "build_app",
    "user",
]
