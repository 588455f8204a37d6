"""A function's resource-based policy (its `AWS::Lambda::Permission` statements), evaluated as Lambda evaluates it
for the two callers the emulator plays.

- A Function URL with `AuthType: NONE` is public only if the policy grants principal `*` both
  `lambda:InvokeFunctionUrl` (with `FunctionUrlAuthType: NONE`) and, since October 2025, `lambda:InvokeFunction`
  (SAM adds it with `InvokedViaFunctionUrl: true`); otherwise every request is refused with 403
  (https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html). With `AuthType: AWS_IAM` an unsigned request is
  refused the same way.
- API Gateway may invoke a function only where the policy grants `apigateway.amazonaws.com`
  `lambda:InvokeFunction` for the request's execute-api ARN (`SourceArn`, with IAM's `*` and `?` wildcards);
  otherwise the API answers 500 (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-troubleshooting-lambda.html).

A permission without a qualifier is taken to cover every qualifier, so the emulator never refuses a call AWS would
allow on that account; what it cannot see (IAM identity policies, signatures) is described in docs/deploy.md.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from stratus.emulator.stack import Permission

PUBLIC = "*"
API_GATEWAY = "apigateway.amazonaws.com"


def _action(granted: str, wanted: str) -> bool:
    return granted.lower() in (wanted.lower(), "lambda:*", "*")


def _qualifier(permission: Permission, qualifier: str | None) -> bool:
    return permission.qualifier is None or permission.qualifier == qualifier


def arn_matches(pattern: str, arn: str) -> bool:
    """IAM ARN matching: `*` any run of characters, `?` any one."""
    regex = "".join(".*" if char == "*" else "." if char == "?" else re.escape(char) for char in pattern)
    return re.fullmatch(regex, arn) is not None


def function_url_is_public(policy: Iterable[Permission], qualifier: str | None) -> bool:
    """Whether `AuthType: NONE` requests may invoke the function through its URL."""
    statements = [permission for permission in policy if permission.principal == PUBLIC]
    url = any(
        _action(permission.action, "lambda:InvokeFunctionUrl")
        and permission.function_url_auth_type == "NONE"
        and _qualifier(permission, qualifier)
        for permission in statements
    )
    invoke = any(
        _action(permission.action, "lambda:InvokeFunction") and _qualifier(permission, qualifier)
        for permission in statements
    )
    return url and invoke


def is_sigv4_signed(authorization: str | None, query: str) -> bool:
    """Whether the request carries a Signature Version 4 signature (header or query string)."""
    return (authorization or "").startswith("AWS4-HMAC-SHA256 ") or "X-Amz-Signature=" in query


def api_gateway_may_invoke(policy: Iterable[Permission], qualifier: str | None, source_arn: str) -> bool:
    """Whether API Gateway may invoke the function for a request whose execute-api ARN is `source_arn`."""
    return any(
        permission.principal == API_GATEWAY
        and _action(permission.action, "lambda:InvokeFunction")
        and _qualifier(permission, qualifier)
        and (permission.source_arn is None or arn_matches(permission.source_arn, source_arn))
        for permission in policy
    )
