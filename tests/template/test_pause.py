"""StartPaused: the DLQ's event source is created enabled unless asked otherwise; `dlq-replay
resume` enables a paused one (the parameter only decides the state CloudFormation sets)."""

from __future__ import annotations

from typing import Any

import pytest

from .cfn import Stack
from .test_template import props

MAPPING = "AWS::Lambda::EventSourceMapping"


def test_the_event_source_is_enabled_by_default(cfn: dict[str, Any]) -> None:
    assert props(Stack(cfn).resources(), MAPPING)["Enabled"] is True


def test_start_paused_creates_the_event_source_disabled(cfn: dict[str, Any]) -> None:
    assert props(Stack(cfn, {"StartPaused": "true"}).resources(), MAPPING)["Enabled"] is False


@pytest.mark.parametrize(("value", "enabled"), [("true", False), ("false", True)])
def test_the_mapping_is_the_one_on_the_dlq(cfn: dict[str, Any], value: str, enabled: bool) -> None:
    stack = Stack(cfn, {"StartPaused": value})
    (name,) = [n for n, r in stack.resources().items() if r["Type"] == MAPPING]
    assert name == "ReplayFunctionDeadLetterQueueEvent"
    assert stack.resources()[name]["Properties"]["Enabled"] is enabled
    assert stack.condition("StartPaused") is not enabled


def test_start_paused_is_a_true_false_choice_in_the_event_source_group(
    sam_template: dict[str, Any],
) -> None:
    spec = sam_template["Parameters"]["StartPaused"]
    assert (spec["Type"], spec["Default"], spec["AllowedValues"]) == (
        "String",
        "false",
        ["true", "false"],
    )
    assert Stack(sam_template, {"StartPaused": "maybe"}).parameter_errors()
    interface = sam_template["Metadata"]["AWS::CloudFormation::Interface"]
    (group,) = [
        g for g in interface["ParameterGroups"] if g["Label"]["default"].startswith("Event source")
    ]
    assert "StartPaused" in group["Parameters"]
    assert interface["ParameterLabels"]["StartPaused"]["default"]
