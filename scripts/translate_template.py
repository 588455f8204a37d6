"""Translate template.yaml (AWS SAM) to plain CloudFormation offline, so cfn-lint can check the resources SAM
generates: cfn-lint on the SAM template alone does not look at values inside `AWS::Serverless::*`.

    python scripts/translate_template.py TEMPLATE OUT.json

Runs in scripts/lint-template's tool venv (aws-sam-cli, cfn-lint). Local `CodeUri`s become an S3 placeholder, as
`sam package` would make them; the template names no managed policies, so none are looked up.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from cfnlint.decode import decode
from samtranslator.translator.transform import transform


class NoManagedPolicies:
    def load(self) -> dict[str, str]:
        return {}


def main(source: str, target: str) -> int:
    template, problems = decode(source)
    if problems or template is None:
        print("\n".join(str(problem) for problem in problems), file=sys.stderr)
        return 1
    for resource in template["Resources"].values():
        if resource["Type"] == "AWS::Serverless::Function":
            resource["Properties"]["CodeUri"] = "s3://packaged/code.zip"
    translated: dict[str, Any] = transform(template, {}, NoManagedPolicies())
    with open(target, "w", encoding="utf-8") as out:
        json.dump(translated, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
