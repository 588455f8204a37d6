"""Stratus: MCP servers on AWS Lambda, both protocol eras, state outside the process."""

from core.config import Settings
from core.resilience.breaker import BreakerPolicy
from core.resilience.limiter import RateLimit
from core.server.content import (
    Audio,
    BlobResource,
    EmbeddedResource,
    Image,
    ResourceLink,
    Text,
    TextResource,
    ToolResult,
)
from core.server.context import Context
from core.server.policy import RateLimits, RetryPolicy
from core.server.principal import Principal
from core.server.prompts import Message, assistant, user
from core.server.server import McpServer
from core.server.tools import ToolError
from core.transport.app import build_app

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
