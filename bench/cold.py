"""Cold-start child of bench/run.py: `python bench/cold.py SUBJECT`.

Runs in a fresh interpreter: imports SUBJECT's handler module (which builds the app), answers ONE tools/call,
then prints one Python literal with its own CPU and wall time for that span. Only `sys`, `time` (both built in)
and `wire` (which imports nothing) are loaded before the clock starts.
"""

import sys
import time

import wire
from procstat import peak_rss_kib

SUBJECT_MODULES = {
    "stratus": "examples.add",
    "stratus-redis": "examples.add",
    "stratus-dynamodb": "examples.add",
    "stratus-built": "examples.add",  # the package `sam build` produces (bench/artifact.py)
    "floor": "floor_app",
    "awslabs": "awslabs_app",
    "sdk": "sdk_app",
    "fastmcp": "fastmcp_app",
    "rmsl": "rmsl_app",
}
WATCHED = (
    "boto3",
    "botocore",
    "redis",
    "aws_lambda_powertools.tracing",
    "aws_xray_sdk",
    "httpx",
    "anyio",
    "opentelemetry",
)


def main() -> None:
    subject = sys.argv[1]
    modules_before = len(sys.modules)
    cpu0 = time.process_time()
    wall0 = time.perf_counter()
    if subject == "bare":
        response: dict[str, object] = {"statusCode": 200, "body": "3"}
    elif subject in SUBJECT_MODULES:
        handler = __import__(SUBJECT_MODULES[subject], fromlist=["handler"]).handler
        response = handler(wire.STATELESS_CALL_EVENT, None)
    else:
        raise SystemExit(f"unknown subject {subject!r}")
    cpu1 = time.process_time()
    wall1 = time.perf_counter()
    loaded = sys.modules
    figures = {
        "peak_rss_kib": peak_rss_kib(),
        "subject": subject,
        "cpu_ms": (cpu1 - cpu0) * 1e3,
        "wall_ms": (wall1 - wall0) * 1e3,
        "cpu_since_start_ms": cpu1 * 1e3,
        "modules": len(loaded),
        "modules_added": len(loaded) - modules_before,
        "watched": [name for name in WATCHED if name in loaded],
        "status": response["statusCode"],
        "body": response["body"],
    }
    print(repr(figures))


main()
