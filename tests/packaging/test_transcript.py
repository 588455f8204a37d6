"""A new user's path from a checkout of Stratus to `sam build` of a project of their own, as a transcript outside the
repository, following the README's "Your own project" and docs/deploy.md's "Deploy checklist" as they are written:

    python -m build --wheel                      (the session's `distribution` fixture, from this checkout)
    python -m venv venv && pip install 'dist/stratus_mcp-....whl[local]' pytest 'moto[dynamodb]' boto3
    stratus init myproj && cd myproj
    python -m pytest                             (the checklist's step 1)
    sam validate                                 (step 2: samconfig.toml adds --lint)
    sam build                                    (step 3: no variable set, no flag)
    stratus local                                (step 4: the checklist's `call` at each front door)

The package index: Stratus itself comes only from the wheel, installed by its path (no index carries
`stratus-mcp`, and the project's build takes it from the copy `stratus init` put in `vendor/`); its dependencies
come from the index, in the venv and in `sam build`'s Lambda wheels alike, because no offline wheelhouse can be
built here: `pip download` would need the index itself (pip's cache on this machine holds no wheels), and the arm64
wheels `sam build` packs are on no disk of this machine.

`sam` is the pinned SAM CLI of scripts/template-tools, on PATH behind the venv's own `python3`, which the project's
Makefile runs. Minutes (a wheel, a venv, arm64 wheels for four functions): `make test` runs it in the background.
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import anyio
import httpx
import pytest

from tests.fixtures.distribution import BUILD_TIMEOUT_SECONDS, ROOT, Distribution, FreshVenv, fresh_venv
from tests.fixtures.emulated_stack import call_tool, free_ports, initialize
from tests.fixtures.processes import end_process

SLOW_TESTS = os.environ.get("STRATUS_SLOW_TESTS") == "1"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not SLOW_TESTS, reason="minutes of wheels; STRATUS_SLOW_TESTS=1 runs it, as `make test` does in the background"
    ),
]

LOCAL_START_SECONDS = 90
DOOR_LINE = re.compile(r"(?m)^  (HTTP API|REST API|Function URL)\s+(\w+)\s+(http://\S+)$")
CHECKLIST = ROOT / "docs" / "deploy.md"
DOORS = ("HTTP API", "REST API", "Function URL")


def _shell_block(after: str) -> str:
    """The first ```sh block of docs/deploy.md after the heading `after`."""
    text = CHECKLIST.read_text(encoding="utf-8")
    start = text.index(after)
    match = re.compile(r"```sh\n(.*?)```", re.DOTALL).search(text, start)
    assert match is not None, f"no sh block after {after!r}"
    return match.group(1)


def _before_the_first_deploy() -> list[str]:
    """The checklist's commands before the first deploy, comments dropped."""
    block = _shell_block("### Before the first deploy")
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.split("#", 1)[0].strip()]


def _call_function() -> str:
    """The checklist's `call` shell function (a tools/call of the project's count_words at the URL it is given)."""
    block = _shell_block("### What to check by hand after the first `sam deploy`")
    match = re.search(r"(?ms)^call\(\) \{.*?^\}$", block)
    assert match is not None, "the checklist defines no call()"
    return match.group(0)


class Transcript:
    """Commands run as the user types them, in `bash`, with the user's venv first on PATH and then the SAM CLI."""

    def __init__(self, venv: FreshVenv, sam_bin: Path) -> None:
        self.venv = venv
        self.path = f"{venv.bin}{os.pathsep}{sam_bin}{os.pathsep}{os.environ.get('PATH', '')}"
        self.lines: list[str] = []

    def environment(self) -> dict[str, str]:
        return self.venv.environment({"PATH": self.path, "SAM_CLI_TELEMETRY": "0"})

    def run(self, command: str, cwd: Path) -> str:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=cwd,
            env=self.environment(),
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT_SECONDS * 2,
            check=False,
        )
        self.lines.append(f"$ {command}\n{done.stdout}{done.stderr}")
        assert done.returncode == 0, "\n".join(self.lines)[-6000:]
        return done.stdout + done.stderr


@pytest.fixture(scope="module")
def user_venv(distribution: Distribution, tmp_path_factory: pytest.TempPathFactory) -> FreshVenv:
    """The README's install from a wheel: the wheel by its path with the `local` extra, and the project's test tools."""
    return fresh_venv(
        tmp_path_factory.mktemp("user-venv"),
        f"{distribution.wheel}[local]",
        "pytest>=8",
        "moto[dynamodb]>=5",
        "boto3",
    )


@pytest.fixture
def sam_bin(sam_cli: Path, tmp_path: Path) -> Path:
    """A folder holding only `sam`, so the SAM CLI's own venv does not shadow the user's `python3` on PATH."""
    folder = tmp_path / "sam-bin"
    folder.mkdir()
    (folder / "sam").symlink_to(sam_cli)
    return folder


async def _banner_doors(process: subprocess.Popen[bytes], output: IO[bytes]) -> dict[str, str]:
    """The MCP URL of each front door `stratus local`'s banner lists, by kind (printed once every door listens)."""
    with anyio.fail_after(LOCAL_START_SECONDS):
        while process.poll() is None:
            output.seek(0)
            doors = {kind: url for kind, _, url in DOOR_LINE.findall(output.read().decode(errors="replace"))}
            if len(doors) == len(DOORS):
                return doors
            await anyio.sleep(0.2)  # polling a process start-up, bounded by fail_after
    output.seek(0)
    raise AssertionError(f"stratus local exited: {output.read().decode(errors='replace')[-3000:]}")


async def _handshake_call(url: str) -> object:
    """count_words through `url` as the official clients call it: initialize (2025-11-25), then tools/call."""
    async with httpx.AsyncClient(timeout=60) as http:
        session = await initialize(http, url)
        counted, _ = await call_tool(http, url, session, "count_words", {"text": "one two three"})
    return counted


@contextmanager
def stratus_local(transcript: Transcript, project: Path) -> Iterator[dict[str, str]]:
    """`stratus local --port P` in the project, as a user starts it; each front door's MCP URL, by kind."""
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(
            ["stratus", "local", "--port", str(free_ports(len(DOORS) + 1))],
            cwd=project,
            env=transcript.environment(),
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            yield anyio.run(_banner_doors, process, output)
        finally:
            end_process(process)


def test_from_a_checkout_to_sam_build_of_a_new_project_following_the_deploy_checklist(
    distribution: Distribution, user_venv: FreshVenv, sam_bin: Path, outside: Path
) -> None:
    transcript = Transcript(user_venv, sam_bin)
    wheel = distribution.wheel.name
    where_from = "import importlib.metadata as m; print(m.distribution('stratus-mcp').read_text('direct_url.json'))"
    recorded = transcript.run(f'python -c "{where_from}"', cwd=outside)
    assert distribution.wheel.as_uri() in recorded, "Stratus did not come from the wheel"

    created = transcript.run("stratus init myproj", cwd=outside)
    assert f"created myproj/vendor/{wheel}" in created
    assert f"sam build installs Stratus as vendor/{wheel}[redis,jwt,powertools]" in created
    project = outside / "myproj"
    assert (project / "vendor" / wheel).read_bytes() == distribution.wheel.read_bytes()

    steps = _before_the_first_deploy()
    assert steps == ["python -m pytest", "sam validate", "sam build"]
    tested, validated, built = (transcript.run(step, cwd=project) for step in steps)
    assert "5 passed" in tested
    assert "is a valid SAM Template" in validated
    assert "--lint" not in validated, "sam validate ran without the lint samconfig.toml asks for"
    assert "Build Succeeded" in built

    for function in ("BufferedFunction", "StreamingFunction", "TaskWorkerFunction", "SweeperFunction"):
        package = project / ".aws-sam" / "build" / function
        for shipped in ("app.py", "run.sh", "stratus/handlers/buffered.py"):
            assert (package / shipped).is_file(), f"{function} lacks {shipped}"
        record = (package / "stratus_mcp-0.1.0.dist-info" / "direct_url.json").read_text()
        assert (project / "vendor" / wheel).as_uri() in record, f"{function}'s Stratus is not the vendored wheel"
        # arm64, the template's Architecture, with no LAMBDA_PLATFORM set: pydantic-core's extension is aarch64's.
        (core,) = (package / "pydantic_core").glob("_pydantic_core.*.so")
        assert "aarch64" in core.name, core.name

    call = _call_function()
    with stratus_local(transcript, project) as doors:
        assert set(doors) == set(DOORS)
        for kind, url in doors.items():
            streamed = transcript.run(f"{call}\ncall {url}", cwd=project)
            messages = [line for line in streamed.splitlines() if line.startswith("data: ")]
            assert '"notifications/message"' in messages[0], (kind, streamed)
            assert '"structuredContent":{"result":3}' in messages[-1], (kind, streamed)
            assert anyio.run(_handshake_call, url) == 3, kind
