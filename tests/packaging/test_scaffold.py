"""A project made by `stratus init` in a fresh virtualenv with the built wheel: its own tests pass, SAM accepts its
template, and the build its template names packs the user's module and requirement with Stratus."""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import anyio
import httpx
import pytest

from tests.fixtures.distribution import Distribution, FreshVenv
from tests.fixtures.emulated_stack import call_tool, free_ports, initialize

LOCAL_START_SECONDS = 60

SAM_ENV = {"SAM_CLI_TELEMETRY": "0", "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1"}

# The built buffered function, imported by a bare Python (no site-packages, as on Lambda), answering tools/list.
SERVE_FROM_PACKAGE = """
import json, sys
import app, ulid
from stratus.handlers.buffered import handler
from stratus.handlers.snapstart import priming_event

class Context:
    aws_request_id = "build-check"
    def get_remaining_time_in_millis(self):
        return 29_000

answer = handler(priming_event("/mcp"), Context())
print(json.dumps({"app": app.__file__, "ulid": ulid.__file__, "paths": sys.path, "answer": answer}))
"""


def _init(venv: FreshVenv, folder: Path) -> Path:
    output = venv.run(venv.bin / "stratus", "init", "my-server", cwd=folder)
    assert "created my-server/template.yaml" in output
    return folder / "my-server"


def test_the_project_passes_its_own_tests_against_the_wheel(scaffold_tools: FreshVenv, outside: Path) -> None:
    project = _init(scaffold_tools, outside)
    report = scaffold_tools.run(scaffold_tools.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=project)
    assert "5 passed" in report


def test_sam_validate_lint_passes_on_the_projects_template(installed: FreshVenv, sam_cli: Path, outside: Path) -> None:
    project = _init(installed, outside)
    report = installed.run(sam_cli, "validate", "--lint", "--template", "template.yaml", cwd=project, env=SAM_ENV)
    assert "is a valid SAM Template" in report


def test_sam_build_packs_the_users_module_and_requirement_with_stratus(
    installed: FreshVenv, sam_cli: Path, outside: Path
) -> None:
    project = _init(installed, outside)
    with (project / "requirements.txt").open("a", encoding="utf-8") as requirements:
        requirements.write("python-ulid>=2\n")
    build = outside / "built"
    # Stratus from the wheel under test, which `stratus init` copied into vendor/; wheels for this machine, so that
    # the package can be imported here.
    installed.run(
        sam_cli,
        "build",
        "--build-in-source",
        "--parallel",
        "--build-dir",
        build,
        cwd=project,
        env={
            **SAM_ENV,
            "LAMBDA_PLATFORM": f"manylinux2014_{platform.machine()}",
        },
    )

    functions = re.findall(
        r"(?m)^  (\w+):\n    Type: AWS::Serverless::Function$", (project / "template.yaml").read_text()
    )
    assert "BufferedFunction" in functions
    assert "StreamingFunction" in functions
    for function in functions:
        package = build / function
        for shipped in ("app.py", "ulid/__init__.py", "stratus/handlers/buffered.py", "run.sh"):
            assert (package / shipped).is_file(), f"{function} lacks {shipped}"
        assert os.access(package / "run.sh", os.X_OK)
        assert not (package / "tests").exists()
        if sys.version_info[:2] == (3, 13):  # the Makefile compiles with the runtime's Python only
            cached = package / "__pycache__" / "app.cpython-313.pyc"
            assert int.from_bytes(cached.read_bytes()[4:8], "little") == 0b01, "app.py's bytecode is not unchecked-hash"

    package = build / "BufferedFunction"
    served = json.loads(
        installed.run(
            installed.python,
            "-S",
            "-c",
            SERVE_FROM_PACKAGE,
            cwd=outside,
            env={"PYTHONPATH": str(package), "STRATUS_APP": "app:server"},
        )
    )
    assert served["app"] == str(package / "app.py")
    assert served["ulid"] == str(package / "ulid" / "__init__.py")
    assert not any("site-packages" in path for path in served["paths"])
    assert served["answer"]["statusCode"] == 200, served["answer"]
    tools = json.loads(served["answer"]["body"])["result"]["tools"]
    assert [tool["name"] for tool in tools] == ["count_words", "publish_note"]


@pytest.mark.anyio
async def test_stratus_local_serves_the_new_project_with_no_flags_and_its_tool_answers(
    installed: FreshVenv, distribution: Distribution, outside: Path
) -> None:
    """The README's "your own project" path, outside the repository: the wheel with its `local` extra, `stratus
    init`, then `stratus local` with nothing but a port (its store the embedded DynamoDB), and a tools/call through
    the Function URL."""
    installed.run(
        installed.python, "-m", "pip", "install", "--quiet", f"{distribution.wheel}[local]", cwd=installed.root
    )
    project = _init(installed, outside)
    first = free_ports(4)
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(  # noqa: ASYNC220 - started once, ended by PID below
            [str(installed.bin / "stratus"), "local", "--port", str(first)],
            cwd=project,
            env=installed.environment(),
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            url = f"http://127.0.0.1:{first + 2}/mcp"  # the Function URL
            async with httpx.AsyncClient(timeout=30) as http:
                with anyio.fail_after(LOCAL_START_SECONDS):
                    while process.poll() is None:
                        try:
                            session = await initialize(http, url)
                            break
                        except httpx.TransportError:
                            await anyio.sleep(0.2)  # polling a process start-up, bounded by fail_after
                if process.poll() is not None:
                    output.seek(0)
                    pytest.fail(f"stratus local exited: {output.read().decode(errors='replace')[-3000:]}")
                counted, _ = await call_tool(http, url, session, "count_words", {"text": "one two three"})
        finally:
            process.terminate()
            process.wait(20)
    assert counted == 3
