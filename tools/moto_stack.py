"""Deploy template.yaml into moto's CloudFormation, for tests that need the real stack.

`deploy_stack` transforms the SAM template offline (tools/transform_template.py), uploads the
local code paths the transform points at ``s3://local-artifacts/<path>`` to moto's S3,
creates the stack, waits for CREATE_COMPLETE and returns its outputs. The clients decide
which moto is used: an in-process ``mock_aws`` or a moto server (``endpoint_url``).

moto's CloudFormation is not CloudFormation. `adapt_for_moto` changes the transformed
template, never template.yaml, in exactly these ways, each one a gap in moto 5.2:

1. A Number parameter resolves to a Python int, where CloudFormation hands resource providers
   strings. Two places depend on that: a ``Fn::FindInMap`` key (moto then looks up ``30`` in a
   mapping keyed ``"30"`` and fails) and a Lambda environment value (moto stores the int, Lambda
   returns strings). There a ``Ref`` to a Number parameter becomes
   ``Fn::Join ["", [Ref]]``, which moto resolves to the same text CloudFormation would.
2. A list item ``Fn::If [cond, x, Ref AWS::NoValue]`` stays in the list as null in moto instead
   of disappearing (it breaks the SAM role's ``Policies``). Such items are resolved here, with
   the conditions evaluated for the given parameters (conditions may only use parameters).
3. moto's ``Ref`` of an ``AWS::Lambda::LayerVersion`` is an object, not the version ARN; an
   output that is such a ``Ref`` is removed rather than returned as garbage.

moto ignores the ``Rules`` section, so `deploy_stack` evaluates the rules itself and refuses
the parameters CloudFormation would refuse. Other things moto accepts but ignores: the
function's ``Layers``, ``Architectures``, ``LoggingConfig`` and ``RecursiveLoop``, and the layer's
``LayerName``; parameter constraints (AllowedValues, AllowedPattern, MinValue...) are not
checked. See `pause_event_source_mappings` for moto's event source mappings.
"""

from __future__ import annotations

import copy
import io
import json
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from botocore.exceptions import ClientError, WaiterError

from tools.transform_template import LOCAL_ARTIFACT_BUCKET, transform_template

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_cloudformation.type_defs import ParameterTypeDef
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_s3 import S3Client

ROOT = Path(__file__).resolve().parents[1]
TEMPLATE = ROOT / "template.yaml"
DEFAULT_STACK_NAME = "sqs-dlq-replay"
# What never goes into an artifact zip.
_SKIPPED_PARTS = ("__pycache__", ".pytest_cache", ".mypy_cache")
_SKIPPED_SUFFIXES = (".pyc", ".egg-info")
_NO_VALUE = {"Ref": "AWS::NoValue"}


class StackDeployError(Exception):
    """The stack was refused or did not reach CREATE_COMPLETE; the message says why."""


def deploy_stack(
    cloudformation: CloudFormationClient,
    s3: S3Client,
    parameters: Mapping[str, str] | None = None,
    *,
    stack_name: str = DEFAULT_STACK_NAME,
    template_path: Path = TEMPLATE,
    timeout_seconds: int = 60,
) -> dict[str, str]:
    """Deploy the SAM template into moto; returns the stack outputs (OutputKey -> value).

    `parameters` are CloudFormation parameter overrides (strings, as on the command line);
    the rest take their defaults. Code paths resolve against the template's directory.
    """
    given = dict(parameters or {})
    region = cloudformation.meta.region_name
    template = transform_template(template_path, given, region)
    failed = failed_rules(template, given, region=region, stack_name=stack_name)
    if failed:
        raise StackDeployError(f"{stack_name}: the template's rules refuse: {'; '.join(failed)}")
    upload_local_artifacts(s3, template, template_path.parent)
    body = json.dumps(adapt_for_moto(template, given, region=region, stack_name=stack_name))
    overrides: list[ParameterTypeDef] = [
        {"ParameterKey": key, "ParameterValue": value} for key, value in given.items()
    ]
    try:
        cloudformation.create_stack(
            StackName=stack_name,
            TemplateBody=body,
            Parameters=overrides,
            Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM"],
        )
        cloudformation.get_waiter("stack_create_complete").wait(
            StackName=stack_name,
            WaiterConfig={"Delay": 1, "MaxAttempts": max(1, timeout_seconds)},
        )
    except (ClientError, WaiterError) as error:
        events = _failure_events(cloudformation, stack_name)
        raise StackDeployError(f"{stack_name}: {error}{events}") from error
    stack = cloudformation.describe_stacks(StackName=stack_name)["Stacks"][0]
    return {
        output["OutputKey"]: output["OutputValue"]
        for output in stack.get("Outputs", [])
        if "OutputKey" in output and "OutputValue" in output
    }


def pause_event_source_mappings(lambda_client: LambdaClient, function_name: str) -> int:
    """Disable the function's event source mappings in moto; returns how many were enabled.

    An enabled mapping makes moto itself receive every message that lands in its source queue
    and invoke the function in Docker (deleting or re-showing the messages by the outcome).
    A test that runs the replay as a worker, standing in for Lambda, disables them first,
    after reading their configuration.
    """
    paused = 0
    pages = lambda_client.get_paginator("list_event_source_mappings")
    for page in pages.paginate(FunctionName=function_name):
        for mapping in page.get("EventSourceMappings", []):
            if mapping.get("State") in ("Enabled", "Enabling", "Updating", "Creating"):
                lambda_client.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
                paused += 1
    return paused


# -- artifacts ------------------------------------------------------------------------------


def upload_local_artifacts(s3: S3Client, template: Mapping[str, Any], root: Path) -> list[str]:
    """Upload what ``s3://local-artifacts/<path>`` names: a directory zipped, a file as is.

    This is the source tree, not `sam build` output (no dependencies, no ``python/`` layer
    prefix): moto stores the code and checks that it exists, but never runs it here.
    Returns the uploaded keys.
    """
    keys = sorted(set(_local_artifact_keys(template)))
    if not keys:
        return []
    _ensure_bucket(s3, LOCAL_ARTIFACT_BUCKET)
    for key in keys:
        path = root / key
        if path.is_dir():
            body = _zip_directory(path)
        elif path.is_file():
            body = path.read_bytes()
        else:
            raise StackDeployError(f"s3://{LOCAL_ARTIFACT_BUCKET}/{key}: no {path}")
        s3.put_object(Bucket=LOCAL_ARTIFACT_BUCKET, Key=key, Body=body)
    return keys


def _local_artifact_keys(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if node.get("S3Bucket") == LOCAL_ARTIFACT_BUCKET and isinstance(node.get("S3Key"), str):
            yield node["S3Key"]
        for value in node.values():
            yield from _local_artifact_keys(value)
    elif isinstance(node, list):
        for value in node:
            yield from _local_artifact_keys(value)


def _ensure_bucket(s3: S3Client, bucket: str) -> None:
    try:
        s3.head_bucket(Bucket=bucket)
        return
    except ClientError:
        pass
    region = s3.meta.region_name
    if region == "us-east-1":
        s3.create_bucket(Bucket=bucket)
    else:
        s3.create_bucket(
            Bucket=bucket,
            CreateBucketConfiguration={"LocationConstraint": region},  # type: ignore[typeddict-item]
        )


def _zip_directory(directory: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.rglob("*")):
            relative = path.relative_to(directory)
            if not path.is_file() or any(
                part in _SKIPPED_PARTS or part.endswith(_SKIPPED_SUFFIXES)
                for part in relative.parts
            ):
                continue
            archive.write(path, relative.as_posix())
    return buffer.getvalue()


# -- the moto adaptations -------------------------------------------------------------------


def adapt_for_moto(
    template: Mapping[str, Any],
    parameters: Mapping[str, str],
    *,
    region: str,
    stack_name: str = DEFAULT_STACK_NAME,
) -> dict[str, Any]:
    """The transformed template with the changes of the module docstring; a copy."""
    adapted = copy.deepcopy(dict(template))
    declared: Mapping[str, Any] = adapted.get("Parameters", {})
    numbers = {name for name, spec in declared.items() if spec.get("Type") == "Number"}
    resources: dict[str, Any] = adapted.get("Resources", {})

    # 1. Number parameters as the strings CloudFormation would pass.
    _stringify_find_in_map_keys(adapted, numbers)
    for resource in resources.values():
        if resource.get("Type") != "AWS::Lambda::Function":
            continue
        variables = resource.get("Properties", {}).get("Environment", {}).get("Variables", {})
        for name, value in variables.items():
            variables[name] = _as_text(value, numbers)

    # 2. Fn::If list items whose chosen branch is AWS::NoValue leave the list.
    evaluator = _Conditions(adapted, parameters, region=region, stack_name=stack_name)
    adapted["Resources"] = _resolve_novalue_items(resources, evaluator)

    # 3. No output moto cannot give a real value.
    layers = {name for name, r in resources.items() if r.get("Type") == "AWS::Lambda::LayerVersion"}
    outputs: dict[str, Any] = adapted.get("Outputs", {})
    for name in [n for n, o in outputs.items() if o.get("Value") in ({"Ref": x} for x in layers)]:
        del outputs[name]
    return adapted


def _as_text(value: Any, numbers: set[str]) -> Any:
    if isinstance(value, dict) and value.get("Ref") in numbers:
        return {"Fn::Join": ["", [value]]}
    return value


def _stringify_find_in_map_keys(node: Any, numbers: set[str]) -> None:
    if isinstance(node, dict):
        arguments = node.get("Fn::FindInMap")
        if isinstance(arguments, list):
            node["Fn::FindInMap"] = [arguments[0], *(_as_text(a, numbers) for a in arguments[1:])]
        for value in node.values():
            _stringify_find_in_map_keys(value, numbers)
    elif isinstance(node, list):
        for value in node:
            _stringify_find_in_map_keys(value, numbers)


def _resolve_novalue_items(node: Any, conditions: _Conditions) -> Any:
    if isinstance(node, dict):
        return {key: _resolve_novalue_items(value, conditions) for key, value in node.items()}
    if not isinstance(node, list):
        return node
    kept: list[Any] = []
    for item in node:
        arguments = item.get("Fn::If") if isinstance(item, dict) and len(item) == 1 else None
        if isinstance(arguments, list) and _NO_VALUE in arguments[1:]:
            name, if_true, if_false = arguments
            chosen = if_true if conditions.condition(name) else if_false
            if chosen != _NO_VALUE:
                kept.append(_resolve_novalue_items(chosen, conditions))
            continue
        kept.append(_resolve_novalue_items(item, conditions))
    return kept


def failed_rules(
    template: Mapping[str, Any],
    parameters: Mapping[str, str],
    *,
    region: str,
    stack_name: str = DEFAULT_STACK_NAME,
) -> list[str]:
    """The template's rules these parameters break, as CloudFormation would report them."""
    conditions = _Conditions(template, parameters, region=region, stack_name=stack_name)
    failed: list[str] = []
    for name, rule in template.get("Rules", {}).items():
        if "RuleCondition" in rule and not conditions.truth(rule["RuleCondition"]):
            continue
        for assertion in rule.get("Assertions", []):
            if not conditions.truth(assertion["Assert"]):
                failed.append(f"{name}: {assertion.get('AssertDescription', 'assertion failed')}")
    return failed


class _Conditions:
    """Conditions and rule assertions for one set of parameter values.

    Covers the functions CloudFormation allows there (Ref to parameters and pseudo
    parameters, Fn::Equals/Not/And/Or/Contains, Condition, Fn::Join/Split/Select/FindInMap);
    anything else raises.
    """

    def __init__(
        self,
        template: Mapping[str, Any],
        parameters: Mapping[str, str],
        *,
        region: str,
        stack_name: str,
    ) -> None:
        self._template = template
        self._values: dict[str, Any] = {}
        for name, spec in template.get("Parameters", {}).items():
            text = str(parameters.get(name, spec.get("Default", "")))
            list_type = spec.get("Type") == "CommaDelimitedList"
            self._values[name] = text.split(",") if list_type else text
        partition = "aws-cn" if region.startswith("cn-") else "aws"
        if region.startswith("us-gov-"):
            partition = "aws-us-gov"
        self._values.update(
            {
                "AWS::Region": region,
                "AWS::Partition": partition,
                "AWS::StackName": stack_name,
                "AWS::URLSuffix": "amazonaws.com.cn" if partition == "aws-cn" else "amazonaws.com",
            }
        )
        self._cache: dict[str, bool] = {}

    def condition(self, name: str) -> bool:
        if name not in self._cache:
            self._cache[name] = self.truth(self._template["Conditions"][name])
        return self._cache[name]

    def truth(self, expression: Any) -> bool:
        if isinstance(expression, bool):
            return expression
        ((function, arguments),) = expression.items()
        rule = self._truths.get(function)
        if rule is None:
            raise StackDeployError(f"unsupported in a condition: {function}")
        return rule(self, arguments)

    def _equals(self, arguments: list[Any]) -> bool:
        left, right = (_text(self.value(a)) for a in arguments)
        return left == right

    def _contains(self, arguments: list[Any]) -> bool:
        haystack, needle = (self.value(a) for a in arguments)
        return _text(needle) in [_text(item) for item in haystack]

    # The functions of a condition, by name: each takes the function's arguments.
    _truths: ClassVar[dict[str, Callable[[_Conditions, Any], bool]]] = {
        "Condition": lambda self, name: self.condition(name),
        "Fn::Equals": _equals,
        "Fn::Not": lambda self, arguments: not self.truth(arguments[0]),
        "Fn::And": lambda self, arguments: all(self.truth(a) for a in arguments),
        "Fn::Or": lambda self, arguments: any(self.truth(a) for a in arguments),
        "Fn::Contains": _contains,
    }

    def value(self, expression: Any) -> Any:
        if isinstance(expression, list):
            return [self.value(item) for item in expression]
        if not isinstance(expression, dict):
            return expression
        ((function, arguments),) = expression.items()
        rule = self._values_of.get(function)
        if rule is None:
            raise StackDeployError(f"unsupported in a condition: {function}")
        return rule(self, arguments)

    def _ref(self, name: str) -> Any:
        if name not in self._values:
            raise StackDeployError(f"a condition refers to {name}, not a parameter")
        return self._values[name]

    def _join(self, arguments: list[Any]) -> str:
        separator, items = arguments
        return str(separator).join(_text(item) for item in self.value(items))

    def _split(self, arguments: list[Any]) -> list[str]:
        separator, text = arguments
        return _text(self.value(text)).split(separator)

    def _select(self, arguments: list[Any]) -> Any:
        index, items = arguments
        return self.value(items)[int(_text(self.value(index)))]

    def _find_in_map(self, arguments: list[Any]) -> Any:
        table, key, attribute = (_text(self.value(a)) for a in arguments)
        return self._template["Mappings"][table][key][attribute]

    # The functions of a value, by name.
    _values_of: ClassVar[dict[str, Callable[[_Conditions, Any], Any]]] = {
        "Ref": _ref,
        "Fn::Join": _join,
        "Fn::Split": _split,
        "Fn::Select": _select,
        "Fn::FindInMap": _find_in_map,
    }


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str | int | float):
        return str(value)
    raise StackDeployError(f"not a scalar in a condition: {value!r}")


def _failure_events(cloudformation: CloudFormationClient, stack_name: str) -> str:
    """The resource failures of a stack that did not complete, one per line, if any."""
    try:
        events = cloudformation.describe_stack_events(StackName=stack_name)["StackEvents"]
    except ClientError:
        return ""
    lines = [
        f"\n  {e.get('LogicalResourceId')}: {e.get('ResourceStatus')} "
        f"{e.get('ResourceStatusReason', '')}".rstrip()
        for e in events
        if str(e.get("ResourceStatus", "")).endswith("FAILED")
    ]
    return "".join(lines)
