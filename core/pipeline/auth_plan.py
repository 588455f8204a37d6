"""Who establishes a request's user, decided once when an app is built (`stratus.composition`)."""

from stratus.server.policy import Authenticator


class AuthenticationPlan:
    """Where authentication happens, and so what a refusal means."""

    __slots__ = ("anyone", "before_call")

    def __init__(self, before_call: tuple[Authenticator, ...] = (), *, anyone: bool = True) -> None:
        self.before_call = before_call
        """The authenticators the pipeline runs before each call: the server's own where nothing ran them for the
        request (a pipeline driven directly); none where the transport ran them (`McpEndpoint`) or a task's run
        carries the principal its creator had."""
        self.anyone = anyone
        """Whether any request can carry a user (the deployment authenticates, or the server has authenticators): a
        restricted item then answers 401 to a request without one, else 403 naming the setting that would
        help."""
