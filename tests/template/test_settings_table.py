"""template.yaml and the documented parameters hold to the settings table (core/settings.py).

Every parameter that reaches the function's environment (followed through Ref, Fn::If, Fn::Sub,
Fn::Join and the like) has the table's Type, Default and MinValue/MaxValue, AllowedValues or
AllowedPattern, both ways; where the template checks a pattern, it accepts exactly what the
table's rule accepts; and the parameter table of the docs shows the same defaults and ranges."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dlq_replay.core.queues import QUEUE_ARN_PATTERN
from dlq_replay.core.settings import SETTING, SETTINGS, Setting, SettingsError

CONSTRAINTS = (
    "Type",
    "Default",
    "MinValue",
    "MaxValue",
    "AllowedValues",
    "AllowedPattern",
    "MinLength",
    "MaxLength",
)
EN_DASH = "\u2013"  # the docs write ranges as 1\u2013100
EXPOSED = [setting for setting in SETTINGS if setting.parameter]

TOPIC = "arn:aws:sns:us-east-1:123456789012:parked"
QUEUE = "arn:aws:sqs:us-east-1:123456789012:orders"
FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:orders"
# Values on both sides of each pattern the template checks (its own and the table's rule).
SAMPLES = {
    "REPLAY_COUNT_ATTRIBUTE": [
        "sqs-dlq-replay-nb",
        "my.Count_attr-1",
        "a" * 256,
        "a" * 257,
        "awsx.count",
        "AWS.x",
        "aws.x",
        "Amazon.x",
        ".lead",
        "trail.",
        "a..b",
        "dlq-replay-park-reason",
        "DLQ-Replay-x",
        "dlq-replayx",
        "my count",
        "count/1",
        "",
    ],
    "PARK_NOTIFICATION_TOPIC_ARN": [
        "",
        TOPIC,
        f"{TOPIC}.fifo",
        "arn:aws-us-gov:sns:us-gov-west-1:123456789012:parked",
        f"arn:aws:sns:us-east-1:123456789012:{'x' * 256}",
        f"arn:aws:sns:us-east-1:123456789012:{'x' * 257}",
        f"arn:aws:sns:us-east-1:123456789012:{'x' * 251}.fifo",
        f"arn:aws:sns:us-east-1:123456789012:{'x' * 252}.fifo",
        f"{TOPIC}.fifo.fifo",
        f"{TOPIC}:sub-id",
        "arn:aws:sns:us-east-1:1234:parked",
        QUEUE,
        "parked",
    ],
    "REPLAY_TARGET_ARNS": [
        "",
        FUNCTION,
        f"{FUNCTION}:live",
        f"{FUNCTION}:12",
        f"{FUNCTION}:$LATEST",
        f"{FUNCTION}:live:1",
        f"arn:aws:lambda:us-east-1:123456789012:function:{'f' * 64}",
        f"arn:aws:lambda:us-east-1:123456789012:function:{'f' * 65}",
        QUEUE,
        f"{QUEUE}.fifo",
        f"arn:aws:sqs:us-east-1:123456789012:{'q' * 81}",
        TOPIC,
        f"{TOPIC}.fifo",
        f"{TOPIC}:sub-id",
        "arn:aws:states:us-east-1:123456789012:stateMachine:orders",
        "arn:aws:states:us-east-1:123456789012:execution:orders:1",
        "arn:aws:events:us-east-1:123456789012:event-bus/default",
        "arn:aws:events:us-east-1:123456789012:rule/orders",
        "arn:aws-us-gov:events:us-gov-west-1:123456789012:event-bus/aws.partner/x.com/1/b",
        "arn:aws:kinesis:us-east-1:123456789012:stream/orders",
        "arn:aws:lambda:us-east-1:1234:function:orders",
        "orders",
    ],
    "queue ARN": [
        QUEUE,
        f"{QUEUE}.fifo",
        f"arn:aws:sqs:us-east-1:123456789012:{'q' * 80}",
        f"arn:aws:sqs:us-east-1:123456789012:{'q' * 81}",
        f"arn:aws:sqs:us-east-1:123456789012:{'q' * 75}.fifo",
        f"arn:aws:sqs:us-east-1:123456789012:{'q' * 76}.fifo",
        "arn:aws-cn:sqs:cn-north-1:123456789012:payments",
        "arn:aws:sqs:us-east-1:1234:orders",
        "arn:aws:sns:us-east-1:123456789012:orders",
        "arn:aws:sqs:us-east-1:123456789012:or.ders",
    ],
}


# -- the template --------------------------------------------------------------------------


def function_environment(sam_template: dict[str, Any]) -> dict[str, Any]:
    (function,) = [
        resource
        for resource in sam_template["Resources"].values()
        if resource["Type"] == "AWS::Serverless::Function"
    ]
    variables: dict[str, Any] = function["Properties"]["Environment"]["Variables"]
    return variables


def parameters_in(value: Any, parameters: dict[str, Any]) -> Iterator[str]:
    """The parameters an intrinsic expression takes its value from: Refs and ${Name} in
    Fn::Sub, through every function (Fn::If's condition only chooses a branch)."""
    if isinstance(value, dict):
        for key, argument in value.items():
            if key == "Ref" and argument in parameters:
                yield argument
            elif key == "Fn::If":
                for branch in argument[1:]:
                    yield from parameters_in(branch, parameters)
            elif key == "Fn::Sub":
                text = argument if isinstance(argument, str) else argument[0]
                yield from (n for n in re.findall(r"\$\{([\w:]+)\}", text) if n in parameters)
                if not isinstance(argument, str):
                    yield from parameters_in(argument[1], parameters)
            else:
                yield from parameters_in(argument, parameters)
    elif isinstance(value, list):
        for item in value:
            yield from parameters_in(item, parameters)


def feeding(sam_template: dict[str, Any]) -> dict[str, set[str]]:
    """Each environment variable of the function and the parameters that feed it."""
    parameters = sam_template["Parameters"]
    return {
        variable: set(parameters_in(value, parameters))
        for variable, value in function_environment(sam_template).items()
    }


def normalized(constraints: dict[str, Any]) -> dict[str, Any]:
    """CloudFormation's values as text (Default 3 is "3"), bounds as numbers."""
    result: dict[str, Any] = {}
    for key in CONSTRAINTS:
        if key not in constraints:
            continue
        value = constraints[key]
        if key in ("MinValue", "MaxValue", "MinLength", "MaxLength"):
            result[key] = float(value)
        elif key == "AllowedValues":
            result[key] = [str(item) for item in value]
        else:
            result[key] = str(value)
    return result


def test_every_parameter_feeding_the_environment_is_a_table_setting(
    sam_template: dict[str, Any],
) -> None:
    for variable, parameters in feeding(sam_template).items():
        if not parameters:
            continue  # a literal (POWERTOOLS_SERVICE_NAME)
        assert variable in SETTING, f"{variable} is set from {parameters} but not in the table"
        assert parameters == {SETTING[variable].parameter}, variable


def test_every_table_parameter_reaches_its_variable(sam_template: dict[str, Any]) -> None:
    fed = feeding(sam_template)
    for setting in EXPOSED:
        assert setting.parameter in sam_template["Parameters"], setting.parameter
        assert fed.get(setting.variable) == {setting.parameter}, setting.variable


@pytest.mark.parametrize("setting", EXPOSED, ids=lambda s: s.variable)
def test_parameter_constraints_are_the_tables(
    sam_template: dict[str, Any], setting: Setting[Any]
) -> None:
    declared = normalized(sam_template["Parameters"][setting.parameter])
    assert declared == normalized(dict(setting.template_constraints))


def _accepted_by_rule(setting: Setting[Any], text: str) -> bool:
    try:
        setting.parse(text)
    except SettingsError:
        return False
    return True


def _accepted_by_template(constraints: dict[str, Any], text: str) -> bool:
    low, high = constraints.get("MinLength", 0), constraints.get("MaxLength", 4096)
    pattern = str(constraints["AllowedPattern"])
    return low <= len(text) <= high and re.fullmatch(pattern, text) is not None


@pytest.mark.parametrize(
    "variable", ["REPLAY_COUNT_ATTRIBUTE", "PARK_NOTIFICATION_TOPIC_ARN", "REPLAY_TARGET_ARNS"]
)
def test_the_template_pattern_accepts_what_the_rule_accepts(
    sam_template: dict[str, Any], variable: str
) -> None:
    setting = SETTING[variable]
    constraints = sam_template["Parameters"][setting.parameter]
    for text in SAMPLES[variable]:
        assert _accepted_by_template(constraints, text) == _accepted_by_rule(setting, text), text


@pytest.mark.parametrize(
    "parameter", ["MainQueueArn", "OperatorQueueArn", "AllowedSourceQueueArns"]
)
def test_queue_arn_parameters_accept_what_the_settings_accept(
    sam_template: dict[str, Any], parameter: str
) -> None:
    constraints = sam_template["Parameters"][parameter]
    arn_list = SETTING["ALLOWED_SOURCE_QUEUE_ARNS"]
    assert _accepted_by_template(constraints, "")
    for arn in SAMPLES["queue ARN"]:
        accepted = QUEUE_ARN_PATTERN.fullmatch(arn) is not None
        assert _accepted_by_template(constraints, arn) == accepted, arn
        assert _accepted_by_rule(arn_list, arn) == accepted, arn


# -- the documented parameter table ---------------------------------------------------------


def parameters_doc(root: Path) -> Path:
    """Where the parameters are documented: docs/deploying.md once the README is split."""
    deploying = root / "docs" / "deploying.md"
    return deploying if deploying.is_file() else root / "README.md"


def section(text: str, heading: str) -> str:
    match = re.search(rf"(?ms)^{re.escape(heading)}\n(.*?)(?=^## |\Z)", text)
    assert match, f"no {heading!r} section"
    return match.group(1)


def table_rows(text: str, header: str) -> dict[str, list[str]]:
    """The rows of the Markdown table whose header row starts with `header`, by first cell."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(header)), None)
    assert start is not None, f"no table {header!r}"
    rows: dict[str, list[str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        rows[cells[0].strip("`")] = cells[1:]
    return rows


def code_spans(cell: str) -> list[str]:
    return re.findall(r"`([^`]*)`", cell)


def assert_default_shown(cell: str, default: str, name: str) -> None:
    if default:
        assert code_spans(cell)[:1] == [default], f"{name}: default {cell!r}, table {default!r}"
    else:
        assert re.search(r"blank|empty|—|none", cell), f"{name}: default {cell!r}, table blank"


def assert_rule_shown(cell: str, constraints: dict[str, Any], name: str) -> None:
    if "AllowedValues" in constraints:
        values = {str(value) for value in constraints["AllowedValues"]}
        assert values <= set(code_spans(cell)), f"{name}: {cell!r} does not list {values}"
    elif "MaxValue" in constraints:
        shown = f"{constraints['MinValue']}{EN_DASH}{constraints['MaxValue']}"
        assert shown in cell, f"{name}: {cell!r} does not say {shown}"
    elif "MinValue" in constraints:
        shown = f"≥ {constraints['MinValue']}"
        assert shown in cell, f"{name}: {cell!r} does not say {shown}"


def test_documented_parameters_are_the_templates(root: Path, sam_template: dict[str, Any]) -> None:
    doc = parameters_doc(root)
    rows = table_rows(section(doc.read_text(), "## Parameters"), "| Parameter |")
    assert set(rows) == set(sam_template["Parameters"]), doc.name


@pytest.mark.parametrize("setting", EXPOSED, ids=lambda s: s.variable)
def test_documented_parameter_matches_the_table(root: Path, setting: Setting[Any]) -> None:
    doc = parameters_doc(root)
    rows = table_rows(section(doc.read_text(), "## Parameters"), "| Parameter |")
    assert setting.parameter in rows, f"{setting.parameter} is not documented in {doc.name}"
    default, allowed, *_ = rows[str(setting.parameter)]
    constraints = dict(setting.template_constraints)
    assert_default_shown(default, str(constraints["Default"]), str(setting.parameter))
    assert_rule_shown(allowed, constraints, str(setting.parameter))


def environment_table(root: Path) -> dict[str, list[str]]:
    """The documented table of the function's variables, wherever the docs keep it."""
    header = "| variable | default | rule |"
    for doc in [root / "README.md", *sorted((root / "docs").glob("*.md"))]:
        if header in doc.read_text():
            return table_rows(doc.read_text(), header)
    raise AssertionError(f"no documented table {header!r}")


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda s: s.variable)
def test_documented_variable_matches_the_table(root: Path, setting: Setting[Any]) -> None:
    rows = environment_table(root)
    assert setting.variable in rows, f"{setting.variable} is not documented"
    default, rule = rows[setting.variable][:2]
    assert_default_shown(default, setting.default, setting.variable)
    assert_rule_shown(rule, dict(setting.rule.constraints), setting.variable)
