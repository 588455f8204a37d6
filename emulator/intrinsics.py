"""CloudFormation's intrinsic functions, resolved the way CloudFormation resolves them at deploy time, as far as a
translated Stratus template needs: parameters with their defaults and overrides, pseudo parameters, conditions,
`Ref`, `Fn::GetAtt`, `Fn::Sub`, `Fn::If`, `Fn::Join`, `Fn::Select`, `Fn::Split`, `Fn::Equals`, `Fn::Not`,
`Fn::And`, `Fn::Or`, `Fn::FindInMap` and `AWS::NoValue`
(https://docs.aws.amazon.com/AWSCloudFormation/latest/UserGuide/intrinsic-function-reference.html).

Resources have no physical identity locally, so `Ref` and `Fn::GetAtt` of a resource give stable made-up ones in
the shapes AWS uses (a function's name and ARN, an API's id); attributes nothing local reads stay placeholders.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

ACCOUNT_ID = "123456789012"


class TemplateError(ValueError):
    """The template (or a parameter override) cannot be resolved."""


class _NoValue:
    """`AWS::NoValue`: the property that resolves to it is removed."""


NO_VALUE = _NoValue()
_SUB_VARIABLE = re.compile(r"\$\{([^}!][^}]*)\}")


def api_id(logical_id: str) -> str:
    """A stable 10-character id in the shape API Gateway gives an API."""
    return hashlib.sha256(logical_id.encode()).hexdigest()[:10]


def parameter_values(template: Mapping[str, Any], overrides: Mapping[str, str]) -> dict[str, Any]:
    """Each parameter's value: the override, else its default; a CommaDelimitedList becomes a list.

    Raises:
        TemplateError: an override names no parameter, a parameter has no value, or a value is not allowed.
    """
    declared: Mapping[str, Any] = template.get("Parameters") or {}
    unknown = sorted(set(overrides) - set(declared))
    if unknown:
        import difflib  # only for a parameter the template does not declare

        named = [
            name + (f" (did you mean {close[0]}?)" if (close := difflib.get_close_matches(name, declared, n=1)) else "")
            for name in unknown
        ]
        raise TemplateError(f"no such template parameter: {', '.join(named)}")
    values: dict[str, Any] = {}
    for name, spec in declared.items():
        if name in overrides:
            raw = overrides[name]
        elif "Default" in spec:
            raw = spec["Default"]
        else:
            raise TemplateError(f"template parameter {name} has no default: pass --parameter {name}=VALUE")
        text = str(raw)
        allowed = spec.get("AllowedValues")
        if allowed is not None and text not in [str(value) for value in allowed]:
            raise TemplateError(f"{name}={text!r} is not one of {', '.join(str(value) for value in allowed)}")
        values[name] = text.split(",") if spec.get("Type") == "CommaDelimitedList" else text
    return values


class Resolver:
    """Resolves intrinsic functions against one stack's parameters, conditions and resources."""

    def __init__(
        self, template: Mapping[str, Any], parameters: Mapping[str, Any], *, stack_name: str, region: str
    ) -> None:
        self.resources: Mapping[str, Any] = template.get("Resources") or {}
        self.mappings: Mapping[str, Any] = template.get("Mappings") or {}
        self.stack_name = stack_name
        self.region = region
        self._values: dict[str, Any] = {
            **parameters,
            "AWS::Region": region,
            "AWS::AccountId": ACCOUNT_ID,
            "AWS::Partition": "aws",
            "AWS::StackName": stack_name,
            "AWS::StackId": f"arn:aws:cloudformation:{region}:{ACCOUNT_ID}:stack/{stack_name}/local",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::NoValue": NO_VALUE,
        }
        self._condition_specs: Mapping[str, Any] = template.get("Conditions") or {}
        self._conditions: dict[str, bool] = {}

    def condition(self, name: str) -> bool:
        """Whether the named condition holds."""
        if name not in self._conditions:
            if name not in self._condition_specs:
                raise TemplateError(f"no such condition: {name}")
            self._conditions[name] = bool(self.resolve(self._condition_specs[name]))
        return self._conditions[name]

    def exists(self, logical_id: str) -> bool:
        """Whether the resource is created (it names no condition, or its condition holds)."""
        resource = self.resources.get(logical_id)
        if resource is None:
            return False
        condition = resource.get("Condition")
        return condition is None or self.condition(condition)

    def created(self, kind: str) -> list[str]:
        """The logical ids of the resources of type `kind` the stack creates."""
        return [
            logical_id
            for logical_id, resource in self.resources.items()
            if resource.get("Type") == kind and self.exists(logical_id)
        ]

    def properties(self, logical_id: str) -> dict[str, Any]:
        """A resource's properties, resolved."""
        resolved: dict[str, Any] = self.resolve(self.resources[logical_id].get("Properties") or {})
        return resolved

    def resolve(self, value: Any) -> Any:
        """`value` with every intrinsic function replaced by its result and `AWS::NoValue` properties removed."""
        if isinstance(value, list):
            return [item for item in (self.resolve(item) for item in value) if item is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (key, argument), *_ = value.items()
            if key == "Ref" or key == "Condition" or key.startswith("Fn::"):
                return self._function(key, argument)
        resolved = {key: self.resolve(item) for key, item in value.items()}
        return {key: item for key, item in resolved.items() if item is not NO_VALUE}

    def _function(self, name: str, argument: Any) -> Any:
        if name == "Ref":
            return self.ref(str(argument))
        if name == "Condition":
            return self.condition(str(argument))
        if name == "Fn::If":
            condition, when_true, when_false = argument
            return self.resolve(when_true if self.condition(condition) else when_false)
        if name == "Fn::GetAtt":
            logical_id, attribute = argument.split(".", 1) if isinstance(argument, str) else argument
            return self.get_att(logical_id, self.resolve(attribute))
        if name == "Fn::Sub":
            return self._sub(argument)
        if name == "Fn::Join":
            separator, items = argument
            return str(separator).join(str(item) for item in self.resolve(items))
        if name == "Fn::Select":
            index, items = self.resolve(argument)
            return items[int(index)]
        if name == "Fn::Split":
            separator, text = self.resolve(argument)
            return str(text).split(separator)
        if name == "Fn::Equals":
            left, right = self.resolve(argument)
            return str(left) == str(right)
        if name == "Fn::Not":
            return not self.resolve(argument[0])
        if name == "Fn::And":
            return all(self.resolve(item) for item in argument)
        if name == "Fn::Or":
            return any(self.resolve(item) for item in argument)
        if name == "Fn::FindInMap":
            mapping, top, second = self.resolve(argument)
            return self.mappings[mapping][top][second]
        if name == "Fn::EachMemberEquals":
            items, expected = self.resolve(argument)
            return all(str(item) == str(expected) for item in items)
        raise TemplateError(f"the local emulator does not resolve {name}")

    def _sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        bound = {key: self.resolve(item) for key, item in variables.items()}

        def replace(match: re.Match[str]) -> str:
            name = match.group(1)
            if name in bound:
                return str(bound[name])
            if "." in name and not name.startswith("AWS::"):
                logical_id, attribute = name.split(".", 1)
                return str(self.get_att(logical_id, attribute))
            return str(self.ref(name))

        return _SUB_VARIABLE.sub(replace, text).replace("${!", "${")

    def ref(self, name: str) -> Any:
        """`Ref`: a parameter's value, a pseudo parameter, or a resource's physical id."""
        if name in self._values:
            return self._values[name]
        resource = self.resources.get(name)
        if resource is None:
            raise TemplateError(f"Ref to {name}, which is neither a parameter nor a resource")
        kind = resource.get("Type", "")
        properties = resource.get("Properties") or {}
        if kind == "AWS::Lambda::Function":
            return self.resolve(properties.get("FunctionName")) or f"{self.stack_name}-{name}"
        if kind == "AWS::Lambda::Alias":
            return f"{self._function_arn(properties.get('FunctionName'))}:{self.resolve(properties['Name'])}"
        if kind == "AWS::Lambda::Version":
            return f"{self._function_arn(properties.get('FunctionName'))}:1"
        if kind in ("AWS::ApiGateway::RestApi", "AWS::ApiGatewayV2::Api"):
            return api_id(name)
        if kind == "AWS::IAM::ManagedPolicy":
            return f"arn:aws:iam::{ACCOUNT_ID}:policy/{self.stack_name}-{name}"
        return f"{self.stack_name}-{name}"

    def get_att(self, logical_id: str, attribute: str) -> Any:
        """`Fn::GetAtt`: the attributes a function's wiring reads, in AWS's shapes; a placeholder otherwise."""
        resource = self.resources.get(logical_id)
        if resource is None:
            raise TemplateError(f"Fn::GetAtt of {logical_id}, which is not a resource")
        kind = resource.get("Type", "")
        if kind == "AWS::Lambda::Function" and attribute == "Arn":
            return self.function_arn(str(self.ref(logical_id)))
        if kind == "AWS::Lambda::Version" and attribute == "Version":
            return "1"
        if kind == "AWS::Lambda::Url" and attribute == "FunctionUrl":
            return f"https://{api_id(logical_id)}.lambda-url.{self.region}.on.aws/"
        if kind == "AWS::IAM::Role" and attribute == "Arn":
            return f"arn:aws:iam::{ACCOUNT_ID}:role/{self.ref(logical_id)}"
        if kind == "AWS::SQS::Queue" and attribute == "Arn":
            return f"arn:aws:sqs:{self.region}:{ACCOUNT_ID}:{self.ref(logical_id)}"
        if kind == "AWS::DynamoDB::Table" and attribute == "Arn":
            return f"arn:aws:dynamodb:{self.region}:{ACCOUNT_ID}:table/{self.ref(logical_id)}"
        if attribute == "Arn":
            return f"arn:aws:local:{self.region}:{ACCOUNT_ID}:{self.ref(logical_id)}"
        return f"{logical_id}.{attribute}"

    def function_arn(self, name: str) -> str:
        return f"arn:aws:lambda:{self.region}:{ACCOUNT_ID}:function:{name}"

    def _function_arn(self, function_name: Any) -> str:
        resolved = str(self.resolve(function_name))
        return resolved if resolved.startswith("arn:") else self.function_arn(resolved)
