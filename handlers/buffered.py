"""The buffered Lambda entry point: the HTTP API in template.yaml, and any front door whose event shape
`stratus.handlers.front_doors` reads (Function URLs in buffered mode, the REST API, ALB, Lambda@Edge).

Each invocation is one request answered by one whole response (`stratus.handlers.invocation`): nothing streams, so
a call answers JSON. The app and its stores are built once per cold start and reused by every warm invocation.
`template.yaml` names `stratus.handlers.buffered.handler`; the server it serves is `STRATUS_APP`
(`module:attribute`). Under SnapStart the app is primed before the snapshot and rebuilt after each restore
(`stratus.handlers.snapstart`). When a secret's service (SSM) does not answer at init, the function starts anyway
and reads it on a later invocation, answering 503 until then (`stratus.handlers.deferred`).
"""

from __future__ import annotations

from stratus.handlers.adapter import make_handler
from stratus.handlers.deferred import ResolvedSettings, start_or_defer
from stratus.handlers.loading import at_start, load_served
from stratus.handlers.secrets import settings_without_secrets
from stratus.handlers.snapstart import snapstart_aware

_named = at_start(settings_without_secrets)
_server = at_start(lambda: load_served(_named))
_settings = ResolvedSettings()
handler = snapstart_aware(lambda: start_or_defer(lambda: make_handler(_server, _settings())), _named.mcp_path)
