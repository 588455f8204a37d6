"""How the doors read with Mangum's event handlers are configured: Mangum's defaults, no base path to strip (the app
sees the path the front door gives it) and Mangum's text types."""

from __future__ import annotations

from mangum.adapter import DEFAULT_TEXT_MIME_TYPES
from mangum.types import LambdaConfig

CONFIG = LambdaConfig(api_gateway_base_path="/", text_mime_types=[*DEFAULT_TEXT_MIME_TYPES], exclude_headers=[])
