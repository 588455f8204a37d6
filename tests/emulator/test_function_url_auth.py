"""Who may call a Function URL, as Lambda decides it: with `FunctionUrlAuthType=AWS_IAM` a request without a
Signature Version 4 signature is refused before the function runs, and a signed one reaches it
(https://docs.aws.amazon.com/lambda/latest/dg/urls-auth.html); a permission granted on one alias does not cover
another, while one on the function itself covers every qualifier ("the scope of that permission depends on whether
you apply it to an alias, a version, or the entire function",
https://docs.aws.amazon.com/lambda/latest/dg/using-aliases.html)."""

from __future__ import annotations

import json

import anyio
import httpx
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from stratus.emulator.resource_policy import api_gateway_may_invoke, function_url_is_public
from stratus.emulator.stack import Permission
from tests.fixtures.emulated_stack import TEMPLATE, serving
from tests.fixtures.lambda_invoke import stateless_request
from tests.fixtures.wire import BASE_HEADERS

pytestmark = [pytest.mark.anyio, pytest.mark.uvicorn]

WAIT_SECONDS = 30.0
FUNCTION = "stratus-local-StreamingFunction"
_BODY, _HEADERS = stateless_request("tools/list", {})
LIST = json.dumps(_BODY).encode()
STATELESS = {**BASE_HEADERS, **_HEADERS}


def _signed(url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
    """`headers` with a SigV4 signature for a POST of `body` to `url` (service `lambda`, as the AWS docs sign a
    Function URL request)."""
    request = AWSRequest(method="POST", url=url, data=body, headers=headers)
    SigV4Auth(Credentials("AKIDEXAMPLE", "secret"), "lambda", "us-east-1").add_auth(request)
    return dict(request.headers.items())


async def test_an_aws_iam_function_url_refuses_an_unsigned_request_and_serves_a_signed_one() -> None:
    with serving(TEMPLATE, parameters={"FunctionUrlAuthType": "AWS_IAM"}, containers=1) as aws:
        url = f"{aws.url('StreamingFunctionUrl')}/mcp"
        with anyio.fail_after(WAIT_SECONDS):
            async with httpx.AsyncClient(timeout=WAIT_SECONDS) as http:
                unsigned = await http.post(url, content=LIST, headers=STATELESS)
                assert aws.pools[FUNCTION].served == []
                signed = await http.post(url, content=LIST, headers=_signed(url, LIST, STATELESS))
    assert (unsigned.status_code, unsigned.json()) == (403, {"Message": "Forbidden"})
    assert signed.status_code == 200, signed.text
    assert "tools" in signed.json()["result"]


def _public(qualifier: str | None) -> tuple[Permission, ...]:
    return (
        Permission("Url", "lambda:InvokeFunctionUrl", "*", FUNCTION, qualifier, function_url_auth_type="NONE"),
        Permission("Invoke", "lambda:InvokeFunction", "*", FUNCTION, qualifier, invoked_via_function_url=True),
    )


def test_a_permission_on_one_alias_does_not_cover_another_or_the_function_itself() -> None:
    assert function_url_is_public(_public("live"), "live")
    assert not function_url_is_public(_public("live"), "canary")
    assert not function_url_is_public(_public("live"), None)
    assert function_url_is_public(_public(None), "live") and function_url_is_public(_public(None), None)
    arn = "arn:aws:execute-api:us-east-1:123456789012:api/v1/POST/mcp"
    on_live = (Permission("Api", "lambda:InvokeFunction", "apigateway.amazonaws.com", FUNCTION, "live", arn),)
    assert api_gateway_may_invoke(on_live, "live", arn)
    assert not api_gateway_may_invoke(on_live, "canary", arn)
