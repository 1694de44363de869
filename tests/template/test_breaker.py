"""OutageBreaker: the state table, the probe rule, the least-privilege policy that lets the
function switch exactly its own event source, the alarm, the dashboard widget; and `off`
removing every one of them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .cfn import STACK_UUID, Stack
from .test_template import ACCOUNT, EXISTING, REGION, props

BREAKER_RESOURCES = {
    "OutageBreakerProbe": "AWS::Events::Rule",
    "OutageBreakerProbePermission": "AWS::Lambda::Permission",
    "OutageBreakerPolicy": "AWS::IAM::Policy",
    "OutageBreakerOpenAlarm": "AWS::CloudWatch::Alarm",
}
RULE_NAME = f"dlq-replay-probe-{STACK_UUID}"
TOPIC_ARN = f"arn:aws:sns:{REGION}:{ACCOUNT}:pager"


def environment(stack: Stack) -> dict[str, Any]:
    variables: dict[str, Any] = props(stack.resources(), "AWS::Lambda::Function")["Environment"][
        "Variables"
    ]
    return variables


@pytest.mark.parametrize("parameters", [{}, EXISTING], ids=["created", "existing"])
def test_the_breaker_is_on_by_default_with_all_its_parts(
    cfn: dict[str, Any], parameters: dict[str, str]
) -> None:
    stack = Stack(cfn, parameters)
    resources = stack.resources()
    assert {name: resources[name]["Type"] for name in BREAKER_RESOURCES} == BREAKER_RESOURCES
    assert resources["OutageBreakerTable"]["Type"] == "AWS::DynamoDB::Table"
    env = environment(stack)
    assert env["OUTAGE_BREAKER"] == "on"
    assert env["OUTAGE_BREAKER_TABLE"] == "{Ref:OutageBreakerTable}"
    # The function is told the rule's name without a reference (the rule targets it).
    assert env["OUTAGE_BREAKER_RULE"] == RULE_NAME
    assert resources["OutageBreakerProbe"]["Properties"]["Name"] == RULE_NAME
    assert len(RULE_NAME) <= 64
    assert stack.outputs()["OutageBreakerTableName"] == "{Ref:OutageBreakerTable}"


def test_off_removes_everything_the_breaker_adds(cfn: dict[str, Any]) -> None:
    on = Stack(cfn, {"CreateDashboard": "true"})
    off = Stack(cfn, {"OutageBreaker": "off", "CreateDashboard": "true"})
    assert set(on.resources()) - set(off.resources()) == set(BREAKER_RESOURCES)
    assert set(off.resources()) < set(on.resources())
    # Only the stack's table stays: it holds the audit trail whatever the breaker.
    assert [name for name in off.resources() if "Breaker" in name] == ["OutageBreakerTable"]
    assert "OutageBreakerTableName" not in off.outputs()
    env = environment(off)
    assert env["OUTAGE_BREAKER"] == "off"
    assert "OUTAGE_BREAKER_TABLE" not in env
    assert "OUTAGE_BREAKER_RULE" not in env
    body = off.resources()["ReplayDashboard"]["Properties"]["DashboardBody"]
    assert "Breaker" not in body
    json.loads(body)
    assert off.parameter_errors() == []


def test_the_table_costs_nothing_idle_and_forgets_old_counters(cfn: dict[str, Any]) -> None:
    table = Stack(cfn).resources()["OutageBreakerTable"]
    assert table["Properties"]["BillingMode"] == "PAY_PER_REQUEST"
    assert table["Properties"]["TimeToLiveSpecification"] == {
        "AttributeName": "expires_at",
        "Enabled": True,
    }
    assert {k["AttributeName"]: k["KeyType"] for k in table["Properties"]["KeySchema"]} == {
        "pk": "HASH",
        "sk": "RANGE",
    }
    # The audit trail outlives the stack, and a replacement never drops it.
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"
    assert "Condition" not in table


def test_the_probe_is_a_disabled_minute_rule_on_the_function(cfn: dict[str, Any]) -> None:
    resources = Stack(cfn).resources()
    rule = resources["OutageBreakerProbe"]["Properties"]
    assert rule["State"] == "DISABLED"  # enabled by the function only while open
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    assert [t["Arn"] for t in rule["Targets"]] == ["{GetAtt:ReplayFunction.Arn}"]
    assert "Input" not in rule["Targets"][0]  # EventBridge's own scheduled event
    permission = resources["OutageBreakerProbePermission"]["Properties"]
    assert permission == {
        "Action": "lambda:InvokeFunction",
        "FunctionName": "{Ref:ReplayFunction}",
        "Principal": "events.amazonaws.com",
        "SourceArn": "{GetAtt:OutageBreakerProbe.Arn}",
    }


def test_the_function_may_switch_exactly_its_own_event_source(cfn: dict[str, Any]) -> None:
    policy = Stack(cfn).resources()["OutageBreakerPolicy"]["Properties"]
    assert policy["Roles"] == ["{Ref:ReplayFunctionRole}"]
    statements = {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}
    assert all(s["Effect"] == "Allow" for s in statements.values())
    mapping = statements["PauseAndResumeItsOwnEventSource"]
    assert mapping["Action"] == ["lambda:GetEventSourceMapping", "lambda:UpdateEventSourceMapping"]
    assert mapping["Resource"] == (
        f"arn:aws:lambda:{REGION}:{ACCOUNT}:event-source-mapping:"
        "{Ref:ReplayFunctionDeadLetterQueueEvent}"
    )
    assert statements["BreakerState"]["Resource"] == "{GetAtt:OutageBreakerTable.Arn}"
    assert sorted(statements["BreakerState"]["Action"]) == [
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:Query",
        "dynamodb:UpdateItem",
    ]
    assert statements["SwitchTheProbe"]["Resource"] == "{GetAtt:OutageBreakerProbe.Arn}"
    assert statements["SwitchTheProbe"]["Action"] == ["events:EnableRule", "events:DisableRule"]
    # The main queue's timing, read on that queue only.
    timing = statements["ReadTheMainQueuesTiming"]
    assert timing["Action"] == "sqs:GetQueueAttributes"
    assert timing["Resource"] == f"arn:aws:sqs:{REGION}:{ACCOUNT}:teststack-main"
    # "*" only for the two read actions that take no resource.
    wildcard = {s["Action"] for s in statements.values() if s["Resource"] == "*"}
    assert wildcard == {"lambda:ListEventSourceMappings", "cloudwatch:GetMetricData"}


def test_the_alarm_fires_while_open_on_the_alarm_topic(cfn: dict[str, Any]) -> None:
    alarm = Stack(cfn, {"AlarmTopicArn": TOPIC_ARN}).resources()["OutageBreakerOpenAlarm"]
    properties = alarm["Properties"]
    assert (properties["Namespace"], properties["MetricName"]) == ("SqsDlqReplay", "BreakerOpen")
    assert properties["Dimensions"] == [
        {"Name": "service", "Value": "sqs-dlq-replay"},
        {"Name": "FunctionName", "Value": "{Ref:ReplayFunction}"},
    ]
    assert (properties["Statistic"], properties["Period"], properties["Threshold"]) == (
        "Maximum",
        60,
        1,
    )
    assert properties["TreatMissingData"] == "notBreaching"  # closed: the probe is silent
    assert properties["AlarmActions"] == [TOPIC_ARN]
    assert properties["OKActions"] == [TOPIC_ARN]
    quiet = Stack(cfn).resources()["OutageBreakerOpenAlarm"]["Properties"]
    assert "AlarmActions" not in quiet


def test_the_dashboard_shows_the_breaker(cfn: dict[str, Any]) -> None:
    stack = Stack(cfn, {"CreateDashboard": "true"})
    body = json.loads(stack.resources()["ReplayDashboard"]["Properties"]["DashboardBody"])
    widget = body["widgets"][-1]["properties"]
    metrics = json.dumps(widget["metrics"])
    for name in ("BreakerOpened", "BreakerClosed", "BreakerOpen"):
        assert f'"{name}"' in metrics, name
    assert "{Ref:ReplayFunction}" in metrics


def test_outage_breaker_is_an_on_off_choice_in_the_replay_policy_group(
    cfn: dict[str, Any],
) -> None:
    parameter = cfn["Parameters"]["OutageBreaker"]
    assert parameter["AllowedValues"] == ["on", "off"]
    assert parameter["Default"] == "on"
    groups = cfn["Metadata"]["AWS::CloudFormation::Interface"]["ParameterGroups"]
    policy = next(g for g in groups if g["Label"]["default"] == "Replay policy")
    assert "OutageBreaker" in policy["Parameters"]
    assert Stack(cfn, {"OutageBreaker": "maybe"}).parameter_errors()
