"""Every value a template parameter accepts is a value the setting it feeds accepts: a value the settings refuse
fails the app's build at init, and under SnapStart (the template's default) the version's publication, which rolls
the whole stack back. So each parameter that feeds a bounded setting carries the bound (MinValue, MaxValue,
AllowedPattern, AllowedValues), and CloudFormation refuses the value before anything is deployed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from stratus.emulator.stack import load_template
from stratus.settings import Settings, SettingsError

TEMPLATE = load_template(Path(__file__).parent.parent / "template.yaml")
PARAMETERS: dict[str, Any] = TEMPLATE["Parameters"]
REQUIRED = {"STRATUS_APP": "tests.fixtures.sample_server:server"}
UNBOUNDED = 10**9
"""What a Number parameter without a MaxValue accepts, as far as this test looks."""


def _fed_settings() -> dict[str, str]:
    """By parameter: the STRATUS_* variable it is passed to as is (`VAR: !Ref Parameter`) in the functions' shared
    environment."""
    variables = TEMPLATE["Globals"]["Function"]["Environment"]["Variables"]
    return {
        value["Ref"]: name
        for name, value in variables.items()
        if name.startswith("STRATUS_") and isinstance(value, dict) and value.get("Ref") in PARAMETERS
    }


FED = _fed_settings()


def _refusal(variable: str, value: str) -> str | None:
    try:
        Settings.from_env({**REQUIRED, variable: value})
    except SettingsError as error:
        return str(error)
    return None


def test_the_bounded_settings_fed_by_parameters_are_found() -> None:
    assert {"PollHoldSeconds", "PollRetrySeconds", "MaxSessions", "SessionTimeoutSeconds", "ServerApp"} <= set(FED)


@pytest.mark.parametrize("parameter", sorted(name for name in FED if PARAMETERS[name]["Type"] == "Number"))
def test_a_number_parameter_accepts_only_what_its_setting_accepts(parameter: str) -> None:
    """Both ends of the parameter's range are accepted by the setting; a parameter without a MinValue or MaxValue
    must feed a setting that is unbounded on that side."""
    spec, variable = PARAMETERS[parameter], FED[parameter]
    lowest = spec.get("MinValue", -UNBOUNDED)
    highest = spec.get("MaxValue", UNBOUNDED)
    for value in (lowest, highest, spec["Default"]):
        assert _refusal(variable, str(value)) is None, f"{parameter}={value} passes CloudFormation, not {variable}"


@pytest.mark.parametrize(
    ("parameter", "refused"),
    [("ServerApp", "examples.demo"), ("AuthAudience", "example.com/mcp")],
)
def test_a_string_parameter_refuses_by_pattern_what_its_setting_refuses(parameter: str, refused: str) -> None:
    pattern = PARAMETERS[parameter]["AllowedPattern"]
    assert re.fullmatch(pattern, PARAMETERS[parameter]["Default"])
    assert not re.fullmatch(pattern, refused)


@pytest.mark.parametrize("parameter", ["Telemetry", "AuthMode"])
def test_each_allowed_value_is_accepted_by_its_setting(parameter: str) -> None:
    for value in PARAMETERS[parameter]["AllowedValues"]:
        refusal = _refusal(FED[parameter], value)
        # jwt and front need their other settings; only an unknown mode is a refusal of the value itself
        assert refusal is None or "must be" not in refusal, f"{parameter}={value}: {refusal}"
