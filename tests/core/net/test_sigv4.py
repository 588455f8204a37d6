"""SigV4 as AWS computes it: each request is signed by our signer and by botocore's (AWS's own SDK, the reference)
at the same moment, and the two `Authorization` headers must be the same."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials as BotoCredentials

from stratus.net.sigv4 import Credentials, environment_credentials, signed_headers

BODY = b"\x0a\x03span-bytes\x00\xff"


@pytest.mark.parametrize(
    ("url", "token", "content_type"),
    [
        ("https://xray.us-east-1.amazonaws.com/v1/traces", "FwoGZXIvYXdzEJr//session-token", "application/x-protobuf"),
        ("https://xray.eu-west-2.amazonaws.com/v1/traces", "", "application/x-protobuf"),
        ("http://127.0.0.1:4566/v1/traces?b=2&a=x%20y", "token", None),
    ],
)
def test_the_signature_is_the_one_botocore_computes(url: str, token: str, content_type: str | None) -> None:
    region = url.split(".")[1] if "amazonaws" in url else "us-east-1"
    headers = {"Content-Type": content_type} if content_type else {}
    reference = AWSRequest(method="POST", url=url, data=BODY, headers=headers)
    SigV4Auth(
        BotoCredentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token or None), "xray", region
    ).add_auth(reference)
    moment = datetime.strptime(reference.headers["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    ours = signed_headers(
        "POST",
        url,
        BODY,
        headers,
        Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", token),
        region=region,
        service="xray",
        now=moment,
    )
    assert ours["Authorization"] == reference.headers["Authorization"]
    assert ours.get("x-amz-security-token") == reference.headers.get("X-Amz-Security-Token")


def test_credentials_come_from_lambda_s_environment_and_never_show_in_a_repr() -> None:
    environ = {
        "AWS_ACCESS_KEY_ID": "ASIAKEY",
        "AWS_SECRET_ACCESS_KEY": "secret-value",
        "AWS_SESSION_TOKEN": "session-tok-value",
    }
    credentials = environment_credentials(environ)
    assert credentials == Credentials("ASIAKEY", "secret-value", "session-tok-value")
    assert "secret-value" not in repr(credentials) and "session-tok-value" not in repr(credentials)
    assert environment_credentials({"AWS_ACCESS_KEY_ID": "ASIAKEY"}) is None
