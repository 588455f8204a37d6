"""The buffered Lambda entry point: API Gateway REST (v1) and HTTP (v2) APIs, Function URLs and ALB.

Responses are whole JSON bodies (Mangum buffers; nothing streams). The app and its stores are built once per
cold start and reused by every warm invocation. `template.yaml` names `stratus.handlers.buffered.handler`; the server it
serves is `STRATUS_APP` (`module:attribute`). Under SnapStart the app is primed before the snapshot and rebuilt
after each restore (`stratus.handlers.snapstart`).
"""

from __future__ import annotations

from stratus.handlers.adapter import make_handler
from stratus.handlers.loading import load_served
from stratus.handlers.secrets import settings_from_env
from stratus.handlers.snapstart import snapstart_aware

_settings = settings_from_env()
_server = load_served(_settings)
handler = snapstart_aware(lambda: make_handler(_server, _settings), _settings.mcp_path)
