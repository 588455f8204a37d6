"""Where a project made by `stratus init` gets Stratus when `sam build` packs its functions: the Stratus that made
it, as pip installed it (PEP 610's direct_url.json), and the stack its samconfig.toml deploys.
(test_transcript.py walks the wheel's path end to end.)"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from stratus.handlers.scaffold import ScaffoldError, StratusSource, init_project, stack_name, stratus_source

EXTRAS = "redis,jwt,powertools"
WHEEL_NAME = "stratus_mcp-0.1.0-py3-none-any.whl"


def _makefile_requirement(project: Path) -> str:
    (line,) = [
        line for line in (project / "Makefile").read_text().splitlines() if line.startswith("STRATUS_REQUIREMENT ?=")
    ]
    return line.removeprefix("STRATUS_REQUIREMENT ?= ")


def _samconfig(project: Path) -> dict[str, dict[str, dict[str, dict[str, object]]]]:
    return tomllib.loads((project / "samconfig.toml").read_text())


def test_a_stratus_from_the_package_index_is_pinned_to_its_version(tmp_path: Path) -> None:
    source = stratus_source(None, "1.2.3")
    assert source == StratusSource(f"stratus-mcp[{EXTRAS}]==1.2.3")
    init_project(tmp_path / "p", stratus=source)
    assert _makefile_requirement(tmp_path / "p") == f"stratus-mcp[{EXTRAS}]==1.2.3"
    assert not (tmp_path / "p" / "vendor").exists()


def test_a_stratus_installed_from_a_wheel_file_is_copied_into_vendor_and_required_from_there(tmp_path: Path) -> None:
    wheel = tmp_path / "dist" / WHEEL_NAME
    wheel.parent.mkdir()
    wheel.write_bytes(b"PK\x03\x04 the wheel")
    record = {"url": wheel.as_uri(), "archive_info": {"hash": "sha256=00"}}
    source = stratus_source(json.dumps(record))
    assert source == StratusSource(f"vendor/{WHEEL_NAME}[{EXTRAS}]", wheel=wheel)

    created = init_project(tmp_path / "p", stratus=source)
    assert Path("vendor", WHEEL_NAME) in created.written
    assert (tmp_path / "p" / "vendor" / WHEEL_NAME).read_bytes() == b"PK\x03\x04 the wheel"
    assert _makefile_requirement(tmp_path / "p") == f"vendor/{WHEEL_NAME}[{EXTRAS}]"
    assert _samconfig(tmp_path / "p")["default"]["build"]["parameters"]["parallel"] is True


def test_a_stratus_installed_from_a_checkout_builds_from_that_checkout_one_function_at_a_time(tmp_path: Path) -> None:
    checkout = tmp_path / "stratus"
    source = stratus_source(json.dumps({"url": checkout.as_uri(), "dir_info": {"editable": True}}))
    assert source == StratusSource(f"stratus-mcp[{EXTRAS}] @ {checkout.as_uri()}", checkout=True)
    init_project(tmp_path / "p", stratus=source)
    assert _makefile_requirement(tmp_path / "p") == f"stratus-mcp[{EXTRAS}] @ {checkout.as_uri()}"
    assert _samconfig(tmp_path / "p")["default"]["build"]["parameters"]["parallel"] is False


def test_a_stratus_installed_from_git_builds_from_the_commit_installed() -> None:
    record = {
        "url": "https://github.com/example/stratus.git",
        "vcs_info": {"vcs": "git", "commit_id": "0123abcd", "requested_revision": "main"},
    }
    assert stratus_source(json.dumps(record)).requirement == (
        f"stratus-mcp[{EXTRAS}] @ git+https://github.com/example/stratus.git@0123abcd"
    )


def test_a_stratus_installed_from_a_wheel_url_builds_from_that_url() -> None:
    url = f"https://example.com/dist/{WHEEL_NAME}"
    source = stratus_source(json.dumps({"url": url, "archive_info": {}}))
    assert source == StratusSource(f"stratus-mcp[{EXTRAS}] @ {url}")


def test_a_wheel_that_is_gone_refuses_the_project_before_its_first_file(tmp_path: Path) -> None:
    gone = tmp_path / WHEEL_NAME
    source = stratus_source(json.dumps({"url": gone.as_uri(), "archive_info": {}}))
    with pytest.raises(ScaffoldError, match=str(gone)):
        init_project(tmp_path / "p", stratus=source)
    assert not (tmp_path / "p").exists()


def test_samconfig_deploys_a_stack_named_for_the_projects_folder_with_its_own_secret_key(tmp_path: Path) -> None:
    init_project(tmp_path / "my-server", stratus=stratus_source(None))
    config = _samconfig(tmp_path / "my-server")["default"]
    assert config["global"]["parameters"]["stack_name"] == "my-server"
    assert config["build"]["parameters"]["build_in_source"] is True
    deploy = config["deploy"]["parameters"]
    assert deploy["capabilities"] == "CAPABILITY_IAM"
    assert deploy["resolve_s3"] is True
    assert deploy["confirm_changeset"] is True
    assert "SecretKeyParameter=/my-server/secret-key" in deploy["parameter_overrides"]  # type: ignore[operator]
    assert "ServerApp=app:server" in deploy["parameter_overrides"]  # type: ignore[operator]
    readme = (tmp_path / "my-server" / "README.md").read_text()
    assert "aws ssm put-parameter --name /my-server/secret-key" in readme
    assert "pypi.org" not in readme


@pytest.mark.parametrize(
    ("folder", "stack"),
    [("my-server", "my-server"), ("My Server_2", "My-Server-2"), ("9lives", "mcp-9lives"), ("-x-", "x")],
)
def test_the_stack_name_is_the_folders_made_a_valid_cloudformation_name(
    tmp_path: Path, folder: str, stack: str
) -> None:
    assert stack_name(tmp_path / folder) == stack


def test_samconfig_overrides_name_parameters_of_the_projects_template_with_values_it_allows(tmp_path: Path) -> None:
    from stratus.emulator.stack import load_template

    init_project(tmp_path / "my-server", stratus=stratus_source(None))
    parameters = load_template(tmp_path / "my-server" / "template.yaml")["Parameters"]
    overrides = _samconfig(tmp_path / "my-server")["default"]["deploy"]["parameters"]["parameter_overrides"]
    for override in overrides:  # type: ignore[attr-defined]
        name, value = override.split("=", 1)
        assert name in parameters, f"template.yaml has no parameter {name}"
        assert value in parameters[name].get("AllowedValues", [value]), override
