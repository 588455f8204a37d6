"""Who establishes a request's user, decided once when an app is built (`stratus.composition`)."""

from typing import NamedTuple

from stratus.server.policy import Authenticator


class AuthenticationPlan(NamedTuple):
    """Where authentication happens, and so what a refusal means."""

    before_call: tuple[Authenticator, ...] = ()
    """The authenticators the pipeline runs before each call: the server's own where nothing ran them for the
    request (a pipeline driven directly); none where the transport ran them (`McpEndpoint`) or a task's run carries
    the principal its creator had."""
    anyone: bool = True
    """Whether any request can carry a user (the deployment authenticates, or the server has authenticators): a
    restricted item then answers 401 to a request without one, else 403 naming the setting that would help."""
