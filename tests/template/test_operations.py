"""The operational layer of the template (issue 12): alarms and where they notify, the
per-park notice topic, the dashboard, retained queues, redrive-allow and TLS policies, the
event source's scaling and metrics, and the refusal of ARNs outside the stack's account and
region. Each parameter's condition is checked both ways on what CloudFormation would deploy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tools.transform_template import load_template

from .cfn import Stack
from .test_template import ACCOUNT, EXISTING, QUEUES, REGION, props

ALARM = "AWS::CloudWatch::Alarm"
TOPIC_ARN = f"arn:aws:sns:{REGION}:{ACCOUNT}:pager"
# Alarm -> (threshold parameter, its default, namespace, metric, statistic, period)
ALARMS = {
    "OperatorQueueDepthAlarm": (
        "OperatorQueueDepthAlarmThreshold", "1",
        "AWS/SQS", "ApproximateNumberOfMessagesVisible", "Maximum", 60,
    ),
    "OperatorQueueAgeAlarm": (
        "OperatorQueueAgeAlarmSeconds", "864000",
        "AWS/SQS", "ApproximateAgeOfOldestMessage", "Maximum", 300,
    ),
    "DeadLetterQueueAgeAlarm": (
        "DeadLetterQueueAgeAlarmSeconds", "86400",
        "AWS/SQS", "ApproximateAgeOfOldestMessage", "Maximum", 300,
    ),
    "DeadLetterQueueInFlightAlarm": (
        "DeadLetterQueueInFlightAlarmThreshold", "100000",
        "AWS/SQS", "ApproximateNumberOfMessagesNotVisible", "Maximum", 60,
    ),
    "SendFailuresAlarm": (
        "SendFailuresAlarmThreshold", "1", "SqsDlqReplay", "SendFailures", "Sum", 300,
    ),
    "ParkNoticeFailuresAlarm": (
        "ParkNoticeFailuresAlarmThreshold", "1", "SqsDlqReplay", "ParkNoticeFailures", "Sum", 300,
    ),
    "FunctionErrorsAlarm": (
        "FunctionErrorsAlarmThreshold", "1", "AWS/Lambda", "Errors", "Sum", 300,
    ),
    "FunctionThrottlesAlarm": (
        "FunctionThrottlesAlarmThreshold", "1", "AWS/Lambda", "Throttles", "Sum", 300,
    ),
}  # fmt: skip


def alarms(stack: Stack) -> dict[str, dict[str, Any]]:
    return {
        name: resource["Properties"]
        for name, resource in stack.resources().items()
        if resource["Type"] == ALARM
    }


def names_of(resources: dict[str, Any], type_: str) -> set[str]:
    return {name for name, resource in resources.items() if resource["Type"] == type_}


# -- alarms ------------------------------------------------------------------------------


def test_every_alarm_exists_by_default_with_its_threshold_metric_and_no_action(
    cfn: dict[str, Any],
) -> None:
    found = alarms(Stack(cfn))
    assert set(found) == {*ALARMS, "OutageBreakerOpenAlarm"}  # tests/template/test_breaker.py
    for name, (parameter, default, namespace, metric, statistic, period) in ALARMS.items():
        alarm = found[name]
        assert cfn["Parameters"][parameter]["Default"] == int(default), name
        assert alarm["Threshold"] == default, name
        assert (alarm["Namespace"], alarm["MetricName"]) == (namespace, metric), name
        assert (alarm["Statistic"], alarm["Period"]) == (statistic, period), name
        assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold", name
        assert alarm["EvaluationPeriods"] == 1, name
        assert alarm["TreatMissingData"] == "notBreaching", name
        assert "AlarmActions" not in alarm, name
        assert "OKActions" not in alarm, name
        assert "docs/operating.md#alarm-runbook" in alarm["AlarmDescription"], name


@pytest.mark.parametrize("alarm", sorted(ALARMS))
def test_a_threshold_of_zero_removes_only_that_alarm(cfn: dict[str, Any], alarm: str) -> None:
    parameter = ALARMS[alarm][0]
    found = alarms(Stack(cfn, {parameter: "0", "OutageBreaker": "off"}))
    assert set(found) == set(ALARMS) - {alarm}
    assert Stack(cfn, {parameter: "0"}).parameter_errors() == []


def test_thresholds_follow_their_parameters(cfn: dict[str, Any]) -> None:
    values = {parameter: str(7 + index) for index, (parameter, *_) in enumerate(ALARMS.values())}
    found = alarms(Stack(cfn, values))
    for name, (parameter, *_) in ALARMS.items():
        assert found[name]["Threshold"] == values[parameter], name


def test_operator_queue_age_alarm_fires_days_before_the_retention_ends(
    cfn: dict[str, Any],
) -> None:
    stack = Stack(cfn)
    retention = int(stack.resources()["OperatorQueue"]["Properties"]["MessageRetentionPeriod"])
    threshold = int(alarms(stack)["OperatorQueueAgeAlarm"]["Threshold"])
    assert (retention, threshold) == (14 * 86400, 10 * 86400)
    in_flight = int(alarms(stack)["DeadLetterQueueInFlightAlarm"]["Threshold"])
    assert in_flight < 120_000  # SQS's in-flight limit per queue
    assert cfn["Parameters"]["DeadLetterQueueInFlightAlarmThreshold"]["MaxValue"] == 120_000


@pytest.mark.parametrize("parameters", [{}, EXISTING], ids=["created", "existing"])
def test_queue_alarms_watch_the_stacks_queues(
    cfn: dict[str, Any], parameters: dict[str, str]
) -> None:
    stack = Stack(cfn, parameters)
    found = alarms(stack)
    if parameters:
        operator, dlq = "orders-operator", "orders-dlq"
    else:
        operator, dlq = stack.queue_name("OperatorQueue"), stack.queue_name("DeadLetterQueue")
    for name, queue in (
        ("OperatorQueueDepthAlarm", operator),
        ("OperatorQueueAgeAlarm", operator),
        ("DeadLetterQueueAgeAlarm", dlq),
        ("DeadLetterQueueInFlightAlarm", dlq),
    ):
        assert found[name]["Dimensions"] == [{"Name": "QueueName", "Value": queue}], name


def test_function_alarms_watch_this_function_and_its_emf_metrics(cfn: dict[str, Any]) -> None:
    found = alarms(Stack(cfn))
    function = {"Name": "FunctionName", "Value": "{Ref:ReplayFunction}"}
    assert found["FunctionErrorsAlarm"]["Dimensions"] == [function]
    assert found["FunctionThrottlesAlarm"]["Dimensions"] == [function]
    # The handler adds FunctionName to Powertools' service dimension (functions/replay/app.py),
    # so two stacks in one account do not share the metric.
    for emf in ("SendFailuresAlarm", "ParkNoticeFailuresAlarm"):
        assert found[emf]["Dimensions"] == [
            {"Name": "service", "Value": "sqs-dlq-replay"},
            function,
        ], emf
        env = props(Stack(cfn).resources(), "AWS::Lambda::Function")["Environment"]["Variables"]
        assert env["POWERTOOLS_METRICS_NAMESPACE"] == found[emf]["Namespace"], emf


def test_alarms_notify_an_existing_topic(cfn: dict[str, Any]) -> None:
    stack = Stack(cfn, {"AlarmTopicArn": TOPIC_ARN})
    for name, alarm in alarms(stack).items():
        assert alarm["AlarmActions"] == [TOPIC_ARN], name
        assert alarm["OKActions"] == [TOPIC_ARN], name
    resources = stack.resources()
    assert not names_of(resources, "AWS::SNS::Topic") | names_of(
        resources, "AWS::SNS::Subscription"
    )
    assert stack.outputs()["AlarmTopicArn"] == TOPIC_ARN


def test_alarm_email_gets_a_topic_and_a_subscription(cfn: dict[str, Any]) -> None:
    stack = Stack(cfn, {"AlarmEmail": "oncall@example.com"})
    resources = stack.resources()
    assert names_of(resources, "AWS::SNS::Topic") == {"AlarmTopic"}
    subscription = props(resources, "AWS::SNS::Subscription")
    assert subscription == {
        "TopicArn": "{Ref:AlarmTopic}",
        "Protocol": "email",
        "Endpoint": "oncall@example.com",
    }
    for name, alarm in alarms(stack).items():
        assert alarm["AlarmActions"] == alarm["OKActions"] == ["{Ref:AlarmTopic}"], name
    assert stack.outputs()["AlarmTopicArn"] == "{Ref:AlarmTopic}"
    assert "KmsMasterKeyId" not in resources["AlarmTopic"]["Properties"]


def test_topic_and_email_together_are_refused(cfn: dict[str, Any]) -> None:
    stack = Stack(cfn, {"AlarmTopicArn": TOPIC_ARN, "AlarmEmail": "oncall@example.com"})
    assert stack.failed_rules() == ["OneAlarmDestination"]
    assert "AlarmTopicArn" not in Stack(cfn).outputs()


@pytest.mark.parametrize(
    ("parameter", "value", "ok"),
    [
        ("AlarmEmail", "oncall@example.com", True),
        ("AlarmEmail", "not an address", False),
        ("AlarmEmail", "a@b", False),
        ("AlarmTopicArn", TOPIC_ARN, True),
        ("AlarmTopicArn", f"arn:aws:sqs:{REGION}:{ACCOUNT}:pager", False),
        ("ParkNotificationTopicArn", f"arn:aws-cn:sns:cn-north-1:{ACCOUNT}:parked.fifo", True),
        ("ParkNotificationTopicArn", "pager", False),
    ],
)
def test_notification_parameters_are_constrained(
    cfn: dict[str, Any], parameter: str, value: str, ok: bool
) -> None:
    assert (Stack(cfn, {parameter: value}).parameter_errors() == []) is ok


# -- the per-park notice and max-age ------------------------------------------------------


def test_park_notices_go_to_the_topic_the_function_may_publish_to(cfn: dict[str, Any]) -> None:
    stack = Stack(cfn, {"ParkNotificationTopicArn": TOPIC_ARN, "MaxMessageAgeSeconds": "3600"})
    resources = stack.resources()
    env = props(resources, "AWS::Lambda::Function")["Environment"]["Variables"]
    assert env["PARK_NOTIFICATION_TOPIC_ARN"] == TOPIC_ARN
    assert env["MAX_MESSAGE_AGE_SECONDS"] == "3600"
    statements = [
        statement
        for policy in props(resources, "AWS::IAM::Role")["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
    ]
    publish = [s for s in statements if "sns:Publish" in json.dumps(s)]
    assert len(publish) == 1
    assert json.dumps(publish[0]["Resource"]).count("pager") == 1
    assert "sns:" not in json.dumps(props(Stack(cfn).resources(), "AWS::IAM::Role"))


# -- dashboard ---------------------------------------------------------------------------


def test_no_dashboard_unless_asked(cfn: dict[str, Any]) -> None:
    assert "ReplayDashboard" not in Stack(cfn).resources()
    assert "DashboardName" not in Stack(cfn).outputs()


@pytest.mark.parametrize("parameters", [{}, EXISTING], ids=["created", "existing"])
def test_dashboard_shows_outcomes_failures_and_the_three_queues(
    cfn: dict[str, Any], parameters: dict[str, str]
) -> None:
    stack = Stack(cfn, {**parameters, "CreateDashboard": "true"})
    dashboard = stack.resources()["ReplayDashboard"]["Properties"]
    assert dashboard["DashboardName"] == "teststack-dlq-replay"
    body = json.loads(dashboard["DashboardBody"])
    titles = [widget["properties"]["title"] for widget in body["widgets"]]
    assert titles == [
        "Replay outcomes (per 5 minutes)",
        "Parked by reason (per 5 minutes)",
        "Drawn delays (seconds)",
        "Failures (per 5 minutes)",
        "Queue depth (visible; DLQ in flight)",
        "Age of the oldest message (seconds)",
        "Recovery by attempt (copies sent vs came back, per hour)",
        "Outage breaker (openings, closings; open while BreakerOpen is 1)",
    ]
    text = json.dumps(body)
    for metric in ("Replayed", "ReplayDelay", "SendFailures", "ParkNoticeFailures", "Throttles"):
        assert f'"{metric}"' in text, metric
    assert 'MetricName=\\"Parked\\" FunctionName=\\"{Ref:ReplayFunction}\\"' in text
    names = [stack.queue_name(q) for q in QUEUES] if not parameters else ["orders", "orders-dlq"]
    names += [] if not parameters else ["orders-operator"]
    for name in names:
        assert text.count(f'"{name}"') >= 2, name  # its depth and its age
    assert stack.outputs()["DashboardName"] == "{Ref:ReplayDashboard}"


# -- queues that hold messages are never deleted with the stack ----------------------------


@pytest.mark.parametrize("queue_type", ["standard", "fifo"])
def test_created_queues_are_retained_and_accept_only_their_source(
    cfn: dict[str, Any], queue_type: str
) -> None:
    stack = Stack(cfn, {"QueueType": queue_type})
    resources = stack.resources()
    for name in QUEUES:
        assert resources[name]["DeletionPolicy"] == "Retain", name
        assert resources[name]["UpdateReplacePolicy"] == "Retain", name
    allow = {name: resources[name]["Properties"]["RedriveAllowPolicy"] for name in QUEUES}
    assert allow == {
        "MainQueue": {"redrivePermission": "denyAll"},
        "DeadLetterQueue": {
            "redrivePermission": "byQueue",
            "sourceQueueArns": [stack.queue_arn("MainQueue")],
        },
        "OperatorQueue": {
            "redrivePermission": "byQueue",
            "sourceQueueArns": [stack.queue_arn("DeadLetterQueue")],
        },
    }
    # The sources named by ARN are the queues that really dead-letter there.
    assert resources["MainQueue"]["Properties"]["RedrivePolicy"]["deadLetterTargetArn"] == (
        stack.queue_arn("DeadLetterQueue")
    )
    suffix = ".fifo" if queue_type == "fifo" else ""
    assert stack.queue_name("MainQueue") == f"teststack-main{suffix}"


def test_only_the_queues_and_the_audit_trail_are_retained(cfn: dict[str, Any]) -> None:
    retained = {
        name
        for name, resource in cfn["Resources"].items()
        if resource.get("DeletionPolicy") == "Retain"
        or resource.get("UpdateReplacePolicy") == "Retain"
    }
    assert retained == {*QUEUES, "OutageBreakerTable"}


# -- hardening -----------------------------------------------------------------------------


def test_tls_policy_only_when_asked(cfn: dict[str, Any]) -> None:
    assert "AWS::SQS::QueuePolicy" not in {r["Type"] for r in Stack(cfn).resources().values()}
    stack = Stack(cfn, {"EnforceTls": "true"})
    policy = props(stack.resources(), "AWS::SQS::QueuePolicy")
    assert policy["Queues"] == [stack.queue_url(q) for q in QUEUES]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement == {
        "Sid": "DenyRequestsWithoutTls",
        "Effect": "Deny",
        "Principal": "*",
        "Action": "sqs:*",
        "Resource": [stack.queue_arn(q) for q in QUEUES],
        "Condition": {"Bool": {"aws:SecureTransport": "false"}},
    }


def test_tls_policy_is_refused_for_existing_queues(cfn: dict[str, Any]) -> None:
    stack = Stack(cfn, {**EXISTING, "EnforceTls": "true"})
    assert stack.failed_rules() == ["TlsPolicyOnlyOnCreatedQueues"]


def test_provisioned_mode_replaces_maximum_concurrency(cfn: dict[str, Any]) -> None:
    stack = Stack(
        cfn,
        {
            "PollingMode": "provisioned",
            "ProvisionedMinimumPollers": "3",
            "ProvisionedMaximumPollers": "40",
            "EventSourceMetrics": "true",
        },
    )
    esm = props(stack.resources(), "AWS::Lambda::EventSourceMapping")
    assert esm["ProvisionedPollerConfig"] == {"MinimumPollers": "3", "MaximumPollers": "40"}
    assert "ScalingConfig" not in esm
    assert esm["MetricsConfig"] == {"Metrics": ["EventCount"]}


@pytest.mark.parametrize(
    ("parameter", "value", "ok"),
    [
        ("ProvisionedMinimumPollers", "1", False),
        ("ProvisionedMinimumPollers", "2", True),
        ("ProvisionedMinimumPollers", "201", False),
        ("ProvisionedMaximumPollers", "2000", True),
        ("ProvisionedMaximumPollers", "2001", False),
        ("PollingMode", "burst", False),
    ],
)
def test_poller_parameters_are_constrained(
    cfn: dict[str, Any], parameter: str, value: str, ok: bool
) -> None:
    assert (Stack(cfn, {parameter: value}).parameter_errors() == []) is ok


OTHER_ACCOUNT = "210987654321"


@pytest.mark.parametrize(
    ("parameters", "outside"),
    [
        ({}, False),
        (EXISTING, False),
        ({"ParkNotificationTopicArn": TOPIC_ARN}, False),
        ({**EXISTING, "DeadLetterQueueArn": f"arn:aws:sqs:{REGION}:{OTHER_ACCOUNT}:dlq"}, True),
        ({**EXISTING, "OperatorQueueArn": f"arn:aws:sqs:eu-west-1:{ACCOUNT}:op"}, True),
        ({**EXISTING, "MainQueueArn": f"arn:aws:sqs:eu-west-1:{ACCOUNT}:orders"}, True),
        ({"ParkNotificationTopicArn": f"arn:aws:sns:{REGION}:{OTHER_ACCOUNT}:pager"}, True),
    ],
    ids=["created", "existing", "topic", "dlq-account", "operator-region", "main-region", "topic"],
)
def test_an_arn_outside_the_stacks_account_or_region_fails_the_stack_by_name(
    cfn: dict[str, Any], parameters: dict[str, str], outside: bool
) -> None:
    stack = Stack(cfn, parameters)
    assert stack.condition("ArnOutsideTheStack") is outside
    found = names_of(stack.resources(), "AWS::CloudFormation::WaitCondition")
    assert found == ({"ArnOutsideTheStackAccountOrRegion"} if outside else set())


# -- checkov (run by `make checkov`) ---------------------------------------------------------


def checkov_skips(template: dict[str, Any]) -> dict[str, dict[str, str]]:
    return {
        name: {
            skip["id"]: skip.get("comment", "")
            for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])
        }
        for name, resource in template["Resources"].items()
        if "checkov" in resource.get("Metadata", {})
    }


def test_every_checkov_skip_is_known_and_says_why(
    sam_template: dict[str, Any], cfn: dict[str, Any], root: Path
) -> None:
    expected = {
        "ReplayLogGroup": {"CKV_AWS_158"},
        "ReplayFunction": {"CKV_AWS_116", "CKV_AWS_117", "CKV_AWS_115", "CKV_AWS_173"},
        "OutageBreakerTable": {"CKV_AWS_28", "CKV_AWS_119"},
    }
    example = load_template(root / "examples" / "nested-app.yaml")
    queues = {"OrdersQueue", "OrdersDeadLetterQueue", "OrdersOperatorQueue"}
    serverless = load_template(root / "examples" / "nested-app-serverless.yaml")
    serverless_queues = {"OrdersTargetQueue", "FailedEventsQueue", "FailedEventsOperatorQueue"}
    for template, wanted in (
        (sam_template, expected),
        (cfn, expected),  # SAM carries the function's Metadata to the Lambda function
        (example, {queue: {"CKV_AWS_27"} for queue in queues}),
        (
            serverless,
            {
                **{queue: {"CKV_AWS_27"} for queue in serverless_queues},
                "OrdersHandler": {"CKV_AWS_115", "CKV_AWS_117"},
            },
        ),
    ):
        skips = checkov_skips(template)
        assert {name: set(ids) for name, ids in skips.items()} == wanted
        for name, ids in skips.items():
            for check, comment in ids.items():
                assert len(comment.split()) >= 8, (name, check)  # a reason, not a placeholder
