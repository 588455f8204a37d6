"""`stratus check-deploy`: what a first deploy shows at its front doors, found at the deployed stack and set beside
what `stratus local` showed for the same template.

    stratus check-deploy --stack NAME                       # the endpoints from the stack's outputs (CloudFormation)
    stratus check-deploy --endpoint McpEndpoint=URL ...      # or the endpoints themselves
        [--record FILE]   write what was found (run it against `stratus local` to make the expectation)
        [--expect FILE]   set it beside an expectation: exit 1 on any difference

At each MCP endpoint the template outputs (`McpEndpoint`: the HTTP API, the buffered function;
`StreamingMcpEndpoint`: the Function URL; `StreamingRestMcpEndpoint`: the REST API's stream), as a client meets it:

- `answers`: a 2025-11-25 `initialize` is answered 200 with a session id, or 401 with a challenge;
- `challenge`: the header an unauthenticated request's challenge comes in (`WWW-Authenticate`, or behind the REST API
  `x-amzn-Remapped-WWW-Authenticate`: API Gateway renames it, and clients then read `resource_metadata` from the
  body), and whether the body names the metadata; `none` when the door lets anyone in;
- `poll`: the session's GET stream, as Lambda serves it: it ends at once with an event id and a `retry:` (a poll),
  or how the door refused it; how long it took is printed beside, never compared.

- `sign-in`: at a door that challenges with the stack's own authorization front (`AuthMode=front`), a browser's
  first steps of a sign-in: the consent page and the cookie it seals its form to, then the 302 to the provider and
  the cookie that binds its callback to the browser (`deploy_sign_in`): what the REST API's stream must pass whole.

With `--stack`, what the stack left in the account is printed after (`deploy_account`): versions kept, each
function's concurrency, what a throttled request gets at each door (a REST API's from its gateway response), custom
metrics and what they cost, the alarms and their states, where failed task runs go, and Parameter Store's
throughput.

- `burst` (with `--burst N`): N requests at once, and how the door refuses those past the function's concurrency
  (`deploy_burst`): 429 at the Function URL, 429 with Retry-After at the REST API; none refused below it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from stratus.handlers.deploy_burst import MAX_BURST, at_once
from stratus.handlers.deploy_http import send
from stratus.handlers.deploy_sign_in import sign_in

ENDPOINTS = ("McpEndpoint", "StreamingMcpEndpoint", "StreamingRestMcpEndpoint")
VERSION = "2025-11-25"
_ACCEPT = "application/json, text/event-stream"
_CHALLENGES = {
    "www-authenticate": "WWW-Authenticate",
    "x-amzn-remapped-www-authenticate": "x-amzn-Remapped-WWW-Authenticate",
}


def add_parser(commands: Any) -> None:
    check = commands.add_parser(
        "check-deploy", help="check a deployed stack's front doors against what stratus local showed"
    )
    source = check.add_mutually_exclusive_group(required=True)
    source.add_argument("--stack", help="the stack's name: its endpoints come from its outputs")
    source.add_argument(
        "--endpoint",
        action="append",
        metavar="OUTPUT=URL",
        help=f"an endpoint by its output's name ({', '.join(ENDPOINTS)})",
    )
    check.add_argument(
        "--burst",
        type=int,
        default=0,
        metavar="N",
        help="also send N requests at once to each door and report how it refuses those past the function's "
        "concurrency (every one invokes the function; default 0: none sent)",
    )
    check.add_argument("--record", metavar="FILE", help="write what was found, as JSON")
    check.add_argument(
        "--expect", metavar="FILE", help="what stratus local showed (a --record file): exit 1 on a difference"
    )


def run(args: argparse.Namespace) -> int:
    try:
        endpoints = _named(args.endpoint) if args.endpoint else stack_endpoints(args.stack)
    except ValueError as error:
        print(f"stratus: {error}", file=sys.stderr)
        return 2
    try:
        found, timings = check(endpoints, burst=args.burst)
    except ValueError as error:
        print(f"stratus: {error}", file=sys.stderr)
        return 2
    expected = json.loads(Path(args.expect).read_text(encoding="utf-8")) if args.expect else None
    differences = 0
    for key, value in found.items():
        shown = "" if expected is None else expected.get(key, "(not checked there)")
        same = expected is None or shown == value
        differences += not same
        timing = f"  ({timings[key]})" if key in timings else ""
        verdict = "" if expected is None else ("  ok" if same else "  DIFFERS")
        beside = "" if expected is None else f"  | stratus local: {shown}"
        print(f"{key:<36} {value}{timing}{beside}{verdict}")
    if args.stack:
        from botocore.exceptions import BotoCoreError, ClientError

        from stratus.handlers.deploy_account import account_findings

        print("in the account (stratus local has none to compare):")
        try:
            for key, value in account_findings(args.stack).items():
                print(f"{key:<36} {value}")
        except (BotoCoreError, ClientError) as refused:  # e.g. a role without cloudwatch:ListMetrics
            print(f"stratus: could not read the account: {refused}", file=sys.stderr)
    if args.record:
        Path(args.record).write_text(json.dumps(found, indent=2) + "\n", encoding="utf-8")
    if differences:
        print(f"{differences} finding(s) differ from what stratus local showed", file=sys.stderr)
    return 1 if differences else 0


def _named(given: Sequence[str]) -> dict[str, str]:
    endpoints = {}
    for item in given:
        name, equals, url = item.partition("=")
        if not equals or name not in ENDPOINTS or not url.startswith(("http://", "https://")):
            raise ValueError(f"--endpoint {item!r}: give OUTPUT=URL, the output one of {', '.join(ENDPOINTS)}")
        endpoints[name] = url
    return endpoints


def stack_endpoints(stack: str) -> dict[str, str]:
    """The MCP endpoints a deployed stack outputs (boto3's region and credentials)."""
    import boto3

    described = boto3.client("cloudformation").describe_stacks(StackName=stack)["Stacks"][0]
    outputs = {output["OutputKey"]: output["OutputValue"] for output in described.get("Outputs", [])}
    found = {name: outputs[name] for name in ENDPOINTS if name in outputs}
    if not found:
        raise ValueError(f"stack {stack} outputs none of {', '.join(ENDPOINTS)}")
    return found


def check(endpoints: Mapping[str, str], *, burst: int = 0) -> tuple[dict[str, str], dict[str, str]]:
    """What each endpoint showed (`<output> <check>`: a finding), and what is printed beside a finding but never
    compared (how long the poll took; the burst's counts). `burst`: also that many requests at once at each."""
    found: dict[str, str] = {}
    timings: dict[str, str] = {}
    if burst and not 1 <= burst <= MAX_BURST:
        raise ValueError(f"--burst takes 1 to {MAX_BURST} requests")
    for name, url in endpoints.items():
        status, headers, body = _send("POST", url, _initialize(), {})
        session = headers.get("mcp-session-id")
        if status == 200 and session:
            found[f"{name} answers"] = "200 with a session"
            found[f"{name} challenge"] = "none"
            _send("POST", url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, _in(session))
            started = time.perf_counter()
            found[f"{name} poll"] = _poll(*_send("GET", url, None, _in(session)))
            timings[f"{name} poll"] = f"{(time.perf_counter() - started) * 1000:.0f} ms"
        else:
            found[f"{name} answers"] = f"{status} with a challenge" if status == 401 else str(status)
            found[f"{name} challenge"] = _challenge(headers, body) if status == 401 else "none"
            found[f"{name} poll"] = f"not reached ({status})"
            if status == 401 and b"resource_metadata" in body:
                found[f"{name} sign-in"] = sign_in(url, body)
        if burst:
            found[f"{name} burst"], timings[f"{name} burst"] = at_once(url, burst)
    return found, timings


def _initialize() -> dict[str, Any]:
    params = {"protocolVersion": VERSION, "capabilities": {}, "clientInfo": {"name": "stratus-check", "version": "1"}}
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


def _in(session: str) -> dict[str, str]:
    return {"mcp-session-id": session, "mcp-protocol-version": VERSION}


def _challenge(headers: Mapping[str, str], body: bytes) -> str:
    header = ", ".join(shown for name, shown in _CHALLENGES.items() if name in headers) or "no challenge header"
    return f"{header}; body {'names' if b'resource_metadata' in body else 'does not name'} resource_metadata"


def _poll(status: int, headers: Mapping[str, str], body: bytes) -> str:
    if status != 200:
        return f"refused {status}"
    lines = body.decode(errors="replace").splitlines()
    has_id = any(line.startswith("id:") for line in lines)
    has_retry = any(line.startswith("retry:") for line in lines)
    if has_id and has_retry:
        return "ends at once with an event id and a retry"
    return f"200 without {'an event id' if not has_id else 'a retry'}"


def _send(method: str, url: str, message: Any, headers: Mapping[str, str]) -> tuple[int, dict[str, str], bytes]:
    data = json.dumps(message).encode() if message is not None else None
    sent = {"accept": _ACCEPT if method == "POST" else "text/event-stream", **headers}
    if data is not None:
        sent["content-type"] = "application/json"
    status, headers_of, body = send(method, url, data, sent)
    return status, {name: values[0] for name, values in headers_of.items()}, body
