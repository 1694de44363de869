"""A small CloudFormation evaluator for the template tests.

It resolves a (transformed) template for one set of parameter values the way CloudFormation
would: conditions, Fn::If with AWS::NoValue, Fn::Sub, Fn::Join/Split/Select, Fn::FindInMap,
rules and parameter constraints. Queues the stack creates get the physical names
CloudFormation would give them (their QueueName, else ``<stack>-<LogicalId>-<suffix>``), so
their ARNs and URLs are real strings; any other resource stays symbolic: ``{Ref:Name}``,
``{GetAtt:Name.Attr}``.
Only the functions this project's templates use are implemented; anything else raises.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

PSEUDO = {
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
}


class _NoValue:
    def __repr__(self) -> str:
        return "AWS::NoValue"


NO_VALUE = _NoValue()
QUEUE_TYPE = "AWS::SQS::Queue"
GENERATED_SUFFIX = "1A2B3C4D5E6F"
STACK_UUID = "c0ffee00-1234-5678-9abc-def012345678"
_SUB_VAR = re.compile(r"\$\{([^}!][^}]*)\}")


class Stack:
    """One template evaluated for one set of parameter values."""

    def __init__(
        self,
        template: Mapping[str, Any],
        parameters: Mapping[str, str] | None = None,
        *,
        stack_name: str = "teststack",
        region: str = "us-east-1",
        account: str = "123456789012",
    ) -> None:
        self.template = template
        given = dict(parameters or {})
        declared: Mapping[str, Any] = template.get("Parameters", {})
        unknown = set(given) - set(declared)
        if unknown:
            raise KeyError(f"parameters not in the template: {sorted(unknown)}")
        self.params: dict[str, Any] = {}
        for name, spec in declared.items():
            raw = given.get(name, spec.get("Default"))
            if raw is None:
                raise KeyError(f"parameter {name} has no value and no default")
            text = str(raw)
            self.params[name] = text.split(",") if spec["Type"] == "CommaDelimitedList" else text
        self.pseudo = {
            **PSEUDO,
            "AWS::StackName": stack_name,
            "AWS::Region": region,
            "AWS::AccountId": account,
            "AWS::StackId": f"arn:aws:cloudformation:{region}:{account}:stack/{stack_name}/"
            f"{STACK_UUID}",
        }
        self._conditions: dict[str, bool] = {}

    # -- parameters ---------------------------------------------------------------------
    def parameter_errors(self) -> list[str]:
        """What CloudFormation would refuse about the parameter values, one line each."""
        errors: list[str] = []
        for name, spec in self.template.get("Parameters", {}).items():
            value = self.params[name]
            for item in value if isinstance(value, list) else [value]:
                errors.extend(f"{name}: {e}" for e in constraint_errors(spec, item))
        return errors

    # -- conditions and rules -------------------------------------------------------------
    def condition(self, name: str) -> bool:
        if name not in self._conditions:
            expression = self.template.get("Conditions", {})[name]
            self._conditions[name] = self._truth(expression)
        return self._conditions[name]

    def failed_rules(self) -> list[str]:
        failed: list[str] = []
        for name, rule in self.template.get("Rules", {}).items():
            if "RuleCondition" in rule and not self._truth(rule["RuleCondition"]):
                continue
            if not all(self._truth(a["Assert"]) for a in rule["Assertions"]):
                failed.append(name)
        return failed

    def _truth(self, expression: Any) -> bool:
        if isinstance(expression, bool):
            return expression
        (function, args), *rest = expression.items()
        if rest:
            raise ValueError(f"not a condition: {expression!r}")
        match function:
            case "Condition":
                return self.condition(args)
            case "Fn::Equals":
                left, right = (self.resolve(a) for a in args)
                return _scalar(left) == _scalar(right)
            case "Fn::Not":
                return not self._truth(args[0])
            case "Fn::And":
                return all(self._truth(a) for a in args)
            case "Fn::Or":
                return any(self._truth(a) for a in args)
            case "Fn::Contains":
                haystack, needle = (self.resolve(a) for a in args)
                return _scalar(needle) in [_scalar(h) for h in haystack]
        raise ValueError(f"unsupported condition function {function}")

    # -- values -------------------------------------------------------------------------
    def resources(self) -> dict[str, dict[str, Any]]:
        """Resources that exist for these parameters, their properties resolved."""
        return self._section("Resources")

    def outputs(self) -> dict[str, Any]:
        return {name: out["Value"] for name, out in self._section("Outputs").items()}

    def _section(self, section: str) -> dict[str, Any]:
        kept: dict[str, Any] = {}
        for name, body in self.template.get(section, {}).items():
            if "Condition" in body and not self.condition(body["Condition"]):
                continue
            kept[name] = self.resolve({k: v for k, v in body.items() if k != "Condition"})
        return kept

    def resolve(self, value: Any) -> Any:
        if isinstance(value, list):
            resolved = [self.resolve(v) for v in value]
            return [v for v in resolved if v is not NO_VALUE]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, args),) = value.items()
            if key == "Ref" or key.startswith("Fn::"):
                return self._function(key, args)
        items = {k: self.resolve(v) for k, v in value.items()}
        return {k: v for k, v in items.items() if v is not NO_VALUE}

    def _function(self, function: str, args: Any) -> Any:
        match function:
            case "Ref":
                return self._ref(args)
            case "Fn::If":
                name, if_true, if_false = args
                return self.resolve(if_true if self.condition(name) else if_false)
            case "Fn::GetAtt":
                resource, attribute = args if isinstance(args, list) else args.split(".", 1)
                return self._get_att(resource, attribute)
            case "Fn::Join":
                separator, items = args
                return separator.join(_scalar(v) for v in self.resolve(items))
            case "Fn::Split":
                separator, text = args
                return _scalar(self.resolve(text)).split(separator)
            case "Fn::Select":
                index, items = args
                return self.resolve(items)[int(self.resolve(index))]
            case "Fn::FindInMap":
                table, key, attribute = (_scalar(self.resolve(a)) for a in args)
                return self.template["Mappings"][table][key][attribute]
            case "Fn::Sub":
                text, variables = (args, {}) if isinstance(args, str) else args
                local = {k: self.resolve(v) for k, v in variables.items()}
                return _SUB_VAR.sub(lambda m: self._sub_var(m.group(1), local), text)
        raise ValueError(f"unsupported intrinsic function {function}")

    def _ref(self, name: str) -> Any:
        if name == "AWS::NoValue":
            return NO_VALUE
        if name in self.pseudo:
            return self.pseudo[name]
        if name in self.params:
            return self.params[name]
        resources = self.template.get("Resources", {})
        if name in resources:
            if resources[name]["Type"] == QUEUE_TYPE:
                return self.queue_url(name)
            return f"{{Ref:{name}}}"
        raise KeyError(f"Ref to unknown {name}")

    def _get_att(self, resource: str, attribute: str) -> str:
        if self.template["Resources"][resource]["Type"] == QUEUE_TYPE:
            if attribute == "Arn":
                return self.queue_arn(resource)
            if attribute == "QueueName":
                return self.queue_name(resource)
        return f"{{GetAtt:{resource}.{attribute}}}"

    # -- queues the stack creates: physical names as CloudFormation makes them ------------
    def queue_name(self, logical_id: str) -> str:
        """QueueName if the template sets one, else a generated <stack>-<id>-<suffix>."""
        properties = self.template["Resources"][logical_id].get("Properties", {})
        name = self.resolve(properties.get("QueueName", {"Ref": "AWS::NoValue"}))
        if name is NO_VALUE:
            return f"{self.pseudo['AWS::StackName']}-{logical_id}-{GENERATED_SUFFIX}"
        return _scalar(name)

    def queue_arn(self, logical_id: str) -> str:
        pseudo = self.pseudo
        return (
            f"arn:{pseudo['AWS::Partition']}:sqs:{pseudo['AWS::Region']}:"
            f"{pseudo['AWS::AccountId']}:{self.queue_name(logical_id)}"
        )

    def queue_url(self, logical_id: str) -> str:
        pseudo = self.pseudo
        return (
            f"https://sqs.{pseudo['AWS::Region']}.{pseudo['AWS::URLSuffix']}/"
            f"{pseudo['AWS::AccountId']}/{self.queue_name(logical_id)}"
        )

    def _sub_var(self, name: str, local: Mapping[str, Any]) -> str:
        if name in local:
            return _scalar(local[name])
        if "." in name and not name.startswith("AWS::"):
            resource, attribute = name.split(".", 1)
            return self._get_att(resource, attribute)
        return _scalar(self._ref(name))


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str | int | float):
        return str(value)
    raise TypeError(f"not a scalar: {value!r}")


def constraint_errors(spec: Mapping[str, Any], value: str) -> list[str]:
    """CloudFormation's parameter constraints applied to one value."""
    errors: list[str] = []
    if "AllowedValues" in spec and value not in [str(v) for v in spec["AllowedValues"]]:
        errors.append(f"{value!r} not in AllowedValues")
    if "AllowedPattern" in spec and not re.fullmatch(spec["AllowedPattern"], value):
        errors.append(f"{value!r} does not match AllowedPattern")
    if "MinLength" in spec and len(value) < int(spec["MinLength"]):
        errors.append(f"{value!r} shorter than MinLength")
    if "MaxLength" in spec and len(value) > int(spec["MaxLength"]):
        errors.append(f"{value!r} longer than MaxLength")
    if spec.get("Type") == "Number":
        try:
            number = float(value)
        except ValueError:
            return [*errors, f"{value!r} is not a number"]
        if "MinValue" in spec and number < float(spec["MinValue"]):
            errors.append(f"{value} below MinValue")
        if "MaxValue" in spec and number > float(spec["MaxValue"]):
            errors.append(f"{value} above MaxValue")
    return errors
