"""How the endpoint reads a request before any JSON-RPC: headers by lower-case name with repeated ones joined, the
Accept check (remembered only for values that accept JSON), and the body's JSON in any encoding json.loads reads."""

from __future__ import annotations

import json

import pytest

from stratus.errors import HttpError, ParseError
from stratus.protocol.jsonrpc import decode
from stratus.transport.asgi import request_headers
from stratus.transport.http_guards import check_accepts_json


def test_headers_are_read_by_lower_case_name_and_a_repeated_one_is_joined_in_order() -> None:
    raw = [(b"Accept", b"application/json"), (b"X-Tag", b"a"), (b"x-tag", b"b"), (b"Host", b"example.com")]

    headers = request_headers({"headers": raw})

    assert headers == {"accept": "application/json", "x-tag": "a, b", "host": "example.com"}


def test_an_accept_value_without_json_is_refused_each_time_and_one_with_it_passes_each_time() -> None:
    for _ in range(2):
        with pytest.raises(HttpError) as refused:
            check_accepts_json({"accept": "text/html"})
        assert refused.value.http_status == 406
        check_accepts_json({"accept": "application/json, text/event-stream"})


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}',
        '{"a": "\u00e9"}'.encode("utf-16"),
        '{"a": 1}'.encode("utf-8-sig"),
        b"{}",
        b"[1]",
        b'{"a": 1} \t\r\n',
        b' {"a": [1, 2.5, null]}',
    ],
)
def test_a_body_decodes_as_json_loads_decodes_it(body: bytes) -> None:
    assert decode(body) == json.loads(body)


@pytest.mark.parametrize(
    "body", [b"{", b'{"a": 1', b'{"a": "\xff"}', b"{\x00}", b"{}{}", b'{"a": 1} x', b"{}\x0c", b'{"a": }']
)
def test_a_body_that_is_not_utf8_json_is_a_parse_error(body: bytes) -> None:
    with pytest.raises(ParseError):
        decode(body)
