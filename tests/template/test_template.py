"""The SAM template (docs/design.md, 'The template'), checked on what CloudFormation would deploy.

`cfn` is template.yaml after the SAM transform (tools/transform_template.py); `Stack`
(tests/template/cfn.py) evaluates it for given parameter values, so conditions, `Fn::If`
and `AWS::NoValue` are exercised the way CloudFormation resolves them.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dlq_replay.core.settings import SETTING, SETTINGS

from tools.transform_template import load_template, transform_template

from .cfn import Stack, constraint_errors

ACCOUNT = "123456789012"
REGION = "us-east-1"
EXISTING = {
    "MainQueueArn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders",
    "DeadLetterQueueArn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-dlq",
    "OperatorQueueArn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-operator",
}
EXISTING_FIFO = {
    "MainQueueArn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders.fifo",
    "DeadLetterQueueArn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-dlq.fifo",
    "OperatorQueueArn": f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-operator.fifo",
}
QUEUES = ("MainQueue", "DeadLetterQueue", "OperatorQueue")
# The settings whose variable is their parameter's value as it is (the settings table).
ENV_FROM_PARAMETERS = {
    setting.variable: str(setting.parameter)
    for setting in SETTINGS
    if setting.parameter
    and setting.parameter_constraints is None
    and setting.rule.constraints["Type"] != "CommaDelimitedList"
}
CLOUDWATCH_RETENTION_DAYS = [
    1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731,
    1096, 1827, 2192, 2557, 2922, 3288, 3653,
]  # fmt: skip
OUTPUTS = {
    "MainQueueUrl",
    "MainQueueArn",
    "DeadLetterQueueUrl",
    "DeadLetterQueueArn",
    "OperatorQueueUrl",
    "OperatorQueueArn",
    "ReplayFunctionName",
    "ReplayFunctionArn",
    "ReplayLayerArn",
    "ReplayLogGroupName",
    "AlarmTopicArn",
    "DashboardName",
    "OutageBreakerTableName",
    "AuditTableName",
    "DeadLetterTargetArn",
}


def one_of_type(resources: dict[str, Any], type_: str) -> tuple[str, dict[str, Any]]:
    found = [(name, r) for name, r in resources.items() if r["Type"] == type_]
    assert len(found) == 1, f"expected one {type_}, found {[n for n, _ in found]}"
    name, resource = found[0]
    return name, resource


def props(resources: dict[str, Any], type_: str) -> dict[str, Any]:
    properties: dict[str, Any] = one_of_type(resources, type_)[1]["Properties"]
    return properties


def walk(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, node
    if isinstance(node, dict):
        for key, value in node.items():
            yield from walk(value, (*path, str(key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, (*path, str(index)))


def statements(role: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for policy in role["Properties"].get("Policies", []):
        found.extend(policy["PolicyDocument"]["Statement"])
    return found


def actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def sqs_queue_grants(resources: dict[str, Any]) -> dict[str, set[str]]:
    """Resource (queue) -> SQS actions granted on it, over every role of the stack."""
    grants: dict[str, set[str]] = {}
    for _, role in ((n, r) for n, r in resources.items() if r["Type"] == "AWS::IAM::Role"):
        for statement in statements(role):
            sqs = [a for a in actions(statement) if a.startswith("sqs:")]
            if not sqs:
                continue
            targets = statement["Resource"]
            for target in targets if isinstance(targets, list) else [targets]:
                grants.setdefault(target, set()).update(sqs)
    return grants


# -- parameters ------------------------------------------------------------------------


def test_every_parameter_is_constrained_grouped_and_labelled(cfn: dict[str, Any]) -> None:
    parameters = cfn["Parameters"]
    constraints = {"AllowedValues", "AllowedPattern", "MinValue", "MaxValue"}
    unconstrained = [n for n, spec in parameters.items() if not constraints & set(spec)]
    assert unconstrained == []
    assert all(spec.get("Description") for spec in parameters.values())

    interface = cfn["Metadata"]["AWS::CloudFormation::Interface"]
    grouped = [p for group in interface["ParameterGroups"] for p in group["Parameters"]]
    assert sorted(grouped) == sorted(parameters), "each parameter in exactly one group"
    assert set(interface["ParameterLabels"]) == set(parameters)


def test_parameter_defaults_pass_their_own_constraints(cfn: dict[str, Any]) -> None:
    assert Stack(cfn).parameter_errors() == []


@pytest.mark.parametrize(
    ("name", "default", "low", "high"),
    [
        ("MaxAttempts", 3, 1, 100),
        ("BackoffBaseSeconds", 60, 1, 43200),
        ("BackoffCapSeconds", 900, 1, 43200),
        ("BatchSize", 10, 1, 10000),
        ("MaximumBatchingWindowInSeconds", 0, 0, 300),
        ("MaximumConcurrency", 5, 2, 1000),
        ("MainQueueMaxReceiveCount", 5, 1, 1000),
    ],
)
def test_numeric_parameter_ranges(
    cfn: dict[str, Any], name: str, default: int, low: int, high: int
) -> None:
    spec = cfn["Parameters"][name]
    assert spec["Type"] == "Number"
    assert (int(spec["Default"]), int(spec["MinValue"]), int(spec["MaxValue"])) == (
        default,
        low,
        high,
    )
    assert constraint_errors(spec, str(low)) == []
    assert constraint_errors(spec, str(high)) == []
    assert constraint_errors(spec, str(low - 1)) != []
    assert constraint_errors(spec, str(high + 1)) != []


def test_backoff_multiplier_is_a_number_of_at_least_one(cfn: dict[str, Any]) -> None:
    spec = cfn["Parameters"]["BackoffMultiplier"]
    assert spec["Type"] == "Number"
    assert float(spec["Default"]) == 2
    assert constraint_errors(spec, "1.5") == []
    assert constraint_errors(spec, "0.9") != []


@pytest.mark.parametrize(
    ("name", "default", "allowed"),
    [
        ("Jitter", "full", ["full", "equal", "decorrelated", "none"]),
        ("QueueType", "standard", ["standard", "fifo"]),
        ("LogMessageBody", "false", ["true", "false"]),
    ],
)
def test_choice_parameters(
    cfn: dict[str, Any], name: str, default: str, allowed: list[str]
) -> None:
    spec = cfn["Parameters"][name]
    assert spec["Default"] == default
    assert [str(v) for v in spec["AllowedValues"]] == allowed


def test_log_retention_allows_exactly_cloudwatch_values(cfn: dict[str, Any]) -> None:
    spec = cfn["Parameters"]["LogRetentionInDays"]
    assert [int(v) for v in spec["AllowedValues"]] == CLOUDWATCH_RETENTION_DAYS
    assert int(spec["Default"]) in CLOUDWATCH_RETENTION_DAYS


@pytest.mark.parametrize(
    "name", ["MainQueueArn", "DeadLetterQueueArn", "OperatorQueueArn", "AllowedSourceQueueArns"]
)
@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("", True),
        ("arn:aws:sqs:us-east-1:123456789012:orders", True),
        ("arn:aws:sqs:eu-west-3:123456789012:orders_2-x.fifo", True),
        ("arn:aws-cn:sqs:cn-north-1:123456789012:orders", True),
        ("arn:aws-us-gov:sqs:us-gov-west-1:123456789012:orders", True),
        ("arn:aws:sqs:us-east-1:123456789012:" + "q" * 80, True),
        ("arn:aws:sqs:us-east-1:123456789012:" + "q" * 81, False),
        ("arn:aws:sqs:us-east-1:123456789012:" + "q" * 76 + ".fifo", False),
        ("arn:aws:sns:us-east-1:123456789012:orders", False),
        ("arn:aws:sqs:us-east-1:12345:orders", False),
        ("https://sqs.us-east-1.amazonaws.com/123456789012/orders", False),
        ("orders", False),
    ],
)
def test_queue_arn_parameters(cfn: dict[str, Any], name: str, value: str, ok: bool) -> None:
    assert (constraint_errors(cfn["Parameters"][name], value) == []) is ok


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("sqs-dlq-replay-nb", True),
        ("my.count_1", True),
        ("a" * 256, True),
        ("a" * 257, False),
        ("AWS.count", False),
        ("aws.count", False),
        ("Amazon.count", False),
        ("amazon.count", False),
        ("awsome.count", True),
        (".count", False),
        ("count.", False),
        ("my..count", False),
        ("my count", False),
        ("", False),
    ],
)
def test_replay_count_attribute_follows_sqs_name_rules(
    cfn: dict[str, Any], value: str, ok: bool
) -> None:
    spec = cfn["Parameters"]["ReplayCountAttribute"]
    assert spec["Default"] == "sqs-dlq-replay-nb"
    assert (constraint_errors(spec, value) == []) is ok


def test_allowed_source_queue_arns_is_a_list_defaulting_to_empty(cfn: dict[str, Any]) -> None:
    spec = cfn["Parameters"]["AllowedSourceQueueArns"]
    assert spec["Type"] == "CommaDelimitedList"
    assert spec["Default"] == ""


# -- modes and rules ---------------------------------------------------------------------


def test_defaults_create_the_three_queues(cfn: dict[str, Any]) -> None:
    stack = Stack(cfn)
    assert stack.condition("CreateQueues")
    assert stack.failed_rules() == []
    created = {n for n, r in stack.resources().items() if r["Type"] == "AWS::SQS::Queue"}
    assert created == set(QUEUES)


def test_existing_mode_creates_no_queue(cfn: dict[str, Any]) -> None:
    stack = Stack(cfn, EXISTING)
    assert not stack.condition("CreateQueues")
    assert stack.failed_rules() == []
    assert not [r for r in stack.resources().values() if r["Type"] == "AWS::SQS::Queue"]


@pytest.mark.parametrize(
    ("parameters", "rule"),
    [
        ({"MainQueueArn": EXISTING["MainQueueArn"]}, "MainQueueNeedsItsDeadLetterQueue"),
        (
            {k: v for k, v in EXISTING.items() if k != "OperatorQueueArn"},
            "ExistingQueuesNeedAnOperatorQueue",
        ),
        (
            {k: v for k, v in EXISTING.items() if k != "MainQueueArn"},
            "SharedDeadLetterQueueNeedsSources",
        ),
        ({"OperatorQueueArn": EXISTING["OperatorQueueArn"]}, "CreatedQueuesTakeNoOperatorQueue"),
    ],
)
def test_rules_refuse_incomplete_queue_sets(
    cfn: dict[str, Any], parameters: dict[str, str], rule: str
) -> None:
    assert rule in Stack(cfn, parameters).failed_rules()


def test_shared_dlq_without_main_queue_is_accepted_with_sources(cfn: dict[str, Any]) -> None:
    sources = f"arn:aws:sqs:{REGION}:{ACCOUNT}:a,arn:aws:sqs:{REGION}:{ACCOUNT}:b"
    parameters = {
        "DeadLetterQueueArn": EXISTING["DeadLetterQueueArn"],
        "OperatorQueueArn": EXISTING["OperatorQueueArn"],
        "AllowedSourceQueueArns": sources,
    }
    stack = Stack(cfn, parameters)
    assert stack.failed_rules() == []
    assert stack.parameter_errors() == []
    env = props(stack.resources(), "AWS::Lambda::Function")["Environment"]["Variables"]
    assert env["MAIN_QUEUE_URL"] == ""
    assert env["ALLOWED_SOURCE_QUEUE_ARNS"] == sources
    assert "MainQueueUrl" not in stack.outputs()


# -- create-everything wiring ------------------------------------------------------------


def test_main_queue_redrives_to_the_dlq(cfn: dict[str, Any]) -> None:
    redrive = cfn["Resources"]["MainQueue"]["Properties"]["RedrivePolicy"]
    assert redrive == {
        "deadLetterTargetArn": {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]},
        "maxReceiveCount": {"Ref": "MainQueueMaxReceiveCount"},
    }
    resolved = Stack(cfn, {"MainQueueMaxReceiveCount": "7"}).resources()["MainQueue"]
    assert resolved["Properties"]["RedrivePolicy"]["maxReceiveCount"] == "7"


def test_dlq_redrives_to_the_operator_queue_as_safety_net(cfn: dict[str, Any]) -> None:
    redrive = cfn["Resources"]["DeadLetterQueue"]["Properties"]["RedrivePolicy"]
    assert redrive == {
        "deadLetterTargetArn": {"Fn::GetAtt": ["OperatorQueue", "Arn"]},
        "maxReceiveCount": {"Ref": "DeadLetterQueueMaxReceiveCount"},
    }
    assert "RedrivePolicy" not in cfn["Resources"]["OperatorQueue"]["Properties"]


def test_safety_net_default_exceeds_main_queue_default(cfn: dict[str, Any]) -> None:
    parameters = cfn["Parameters"]
    main = int(parameters["MainQueueMaxReceiveCount"]["Default"])
    safety = int(parameters["DeadLetterQueueMaxReceiveCount"]["Default"])
    assert safety > main
    # Every receive on the main queue travels into the DLQ with the message: the safety net
    # needs room for the main queue's full count plus the DLQ's own retries and holds.
    assert safety >= 2 * main
    assert "receive count" in parameters["DeadLetterQueueMaxReceiveCount"]["Description"]


def test_dlq_visibility_is_six_times_each_allowed_function_timeout(cfn: dict[str, Any]) -> None:
    timeout = cfn["Parameters"]["FunctionTimeout"]
    allowed = [int(v) for v in timeout["AllowedValues"]]
    assert int(timeout["Default"]) in allowed
    table = cfn["Mappings"]["DeadLetterQueueVisibility"]
    assert sorted(int(k) for k in table) == sorted(allowed)
    for seconds in allowed:
        stack = Stack(cfn, {"FunctionTimeout": str(seconds)})
        resources = stack.resources()
        dlq = resources["DeadLetterQueue"]["Properties"]
        assert int(dlq["VisibilityTimeout"]) == 6 * seconds
        assert props(resources, "AWS::Lambda::Function")["Timeout"] == str(seconds)
        assert 6 * seconds <= 43200


@pytest.mark.parametrize("timeout", [10, 15, 30, 60, 120, 300])
def test_a_batching_window_adds_the_largest_window_to_the_dlq_visibility(
    cfn: dict[str, Any], timeout: int
) -> None:
    # Lambda: the source queue's visibility timeout should be at least six times the function
    # timeout plus MaximumBatchingWindowInSeconds.
    window = int(cfn["Parameters"]["MaximumBatchingWindowInSeconds"]["MaxValue"])
    for queue_type, expected in (("standard", 6 * timeout + window), ("fifo", 6 * timeout)):
        stack = Stack(
            cfn,
            {
                "FunctionTimeout": str(timeout),
                "MaximumBatchingWindowInSeconds": "1",
                "QueueType": queue_type,
            },
        )
        dlq = stack.resources()["DeadLetterQueue"]["Properties"]
        assert int(dlq["VisibilityTimeout"]) == expected, queue_type  # no window on FIFO


@pytest.mark.parametrize(
    ("parameters", "refused"),
    [
        ({"BatchSize": "10"}, False),
        ({"BatchSize": "11"}, True),
        ({"BatchSize": "11", "MaximumBatchingWindowInSeconds": "1"}, False),
        ({"BatchSize": "10000", "MaximumBatchingWindowInSeconds": "20"}, False),
        ({"BatchSize": "10", "QueueType": "fifo"}, False),
        ({"BatchSize": "11", "MaximumBatchingWindowInSeconds": "1", "QueueType": "fifo"}, True),
        ({**EXISTING, "BatchSize": "500", "MaximumBatchingWindowInSeconds": "1"}, False),
        ({**EXISTING, "BatchSize": "500"}, True),
    ],
)
def test_batches_above_ten_follow_lambdas_rules(
    cfn: dict[str, Any], parameters: dict[str, str], refused: bool
) -> None:
    stack = Stack(cfn, parameters)
    assert stack.parameter_errors() == []
    assert ("BigBatchesNeedABatchingWindow" in stack.failed_rules()) is refused
    if not refused:
        esm = props(stack.resources(), "AWS::Lambda::EventSourceMapping")
        assert esm["BatchSize"] == parameters["BatchSize"]


def test_created_queues_are_encrypted_and_retain_long_enough(cfn: dict[str, Any]) -> None:
    resources = Stack(cfn).resources()
    for name in QUEUES:
        assert resources[name]["Properties"]["SqsManagedSseEnabled"] is True
    retention = {n: int(resources[n]["Properties"]["MessageRetentionPeriod"]) for n in QUEUES}
    assert retention["DeadLetterQueue"] == retention["OperatorQueue"] == 14 * 24 * 3600
    assert retention["MainQueue"] < retention["DeadLetterQueue"]


KMS_KEY = f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def test_kms_key_encrypts_created_queues_and_is_granted_to_the_function(
    cfn: dict[str, Any],
) -> None:
    resources = Stack(cfn, {"QueueKmsKeyArn": KMS_KEY}).resources()
    for name in QUEUES:
        queue = resources[name]["Properties"]
        assert queue["KmsMasterKeyId"] == KMS_KEY
        assert "SqsManagedSseEnabled" not in queue  # SQS refuses both at once
    kms = [
        statement
        for policy in props(resources, "AWS::IAM::Role")["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
        if any(str(action).startswith("kms:") for action in _as_list(statement["Action"]))
    ]
    assert kms == [
        {
            "Sid": "UseQueueKmsKey",
            "Effect": "Allow",
            "Action": ["kms:Decrypt", "kms:GenerateDataKey"],
            "Resource": KMS_KEY,
            # Only through SQS (or SNS, for an encrypted notice topic), never directly.
            "Condition": {
                "StringEquals": {
                    "kms:ViaService": ["sqs.us-east-1.amazonaws.com", "sns.us-east-1.amazonaws.com"]
                }
            },
        }
    ]


def test_no_kms_permission_without_a_key(cfn: dict[str, Any]) -> None:
    for parameters in ({}, EXISTING):
        resources = Stack(cfn, parameters).resources()
        actions = [
            str(action)
            for policy in props(resources, "AWS::IAM::Role")["Policies"]
            for statement in policy["PolicyDocument"]["Statement"]
            for action in _as_list(statement["Action"])
        ]
        assert not [a for a in actions if a.startswith("kms:")]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_standard_queues_have_no_fifo_settings(cfn: dict[str, Any]) -> None:
    resources = Stack(cfn).resources()
    fifo_only = {
        "FifoQueue",
        "ContentBasedDeduplication",
        "DeduplicationScope",
        "FifoThroughputLimit",
    }
    for name in QUEUES:
        assert not fifo_only & set(resources[name]["Properties"]), name
    assert [resources[name]["Properties"]["QueueName"] for name in QUEUES] == [
        "teststack-main",
        "teststack-dlq",
        "teststack-operator",
    ]
    esm = props(resources, "AWS::Lambda::EventSourceMapping")
    assert esm["MaximumBatchingWindowInSeconds"] == "0"


def test_fifo_queue_type_creates_high_throughput_fifo_queues(cfn: dict[str, Any]) -> None:
    stack = Stack(cfn, {"QueueType": "fifo"}, stack_name="shop")
    assert stack.failed_rules() == []
    resources = stack.resources()
    names = {}
    for name in QUEUES:
        queue = resources[name]["Properties"]
        names[name] = queue["QueueName"]
        assert queue["QueueName"].endswith(".fifo")
        assert queue["QueueName"].startswith("shop-")
        assert len(queue["QueueName"]) <= 80
        assert queue["FifoQueue"] is True
        assert queue["ContentBasedDeduplication"] is False
        assert queue["DeduplicationScope"] == "messageGroup"
        assert queue["FifoThroughputLimit"] == "perMessageGroupId"
    assert len(set(names.values())) == 3
    esm = props(resources, "AWS::Lambda::EventSourceMapping")
    assert "MaximumBatchingWindowInSeconds" not in esm
    assert int(esm["BatchSize"]) <= 10


def test_existing_fifo_dlq_gets_no_batching_window(cfn: dict[str, Any]) -> None:
    fifo = Stack(cfn, {**EXISTING_FIFO, "MaximumBatchingWindowInSeconds": "5"})
    assert "MaximumBatchingWindowInSeconds" not in props(
        fifo.resources(), "AWS::Lambda::EventSourceMapping"
    )
    standard = Stack(cfn, {**EXISTING, "MaximumBatchingWindowInSeconds": "5"})
    esm = props(standard.resources(), "AWS::Lambda::EventSourceMapping")
    assert esm["MaximumBatchingWindowInSeconds"] == "5"


def test_queue_type_is_ignored_for_existing_queues(cfn: dict[str, Any]) -> None:
    stack = Stack(cfn, {**EXISTING, "QueueType": "fifo"})
    assert not stack.condition("CreateFifoQueues")
    assert not [r for r in stack.resources().values() if r["Type"] == "AWS::SQS::Queue"]


# -- function, layer, logs ---------------------------------------------------------------


def test_function_runtime_and_layer(cfn: dict[str, Any]) -> None:
    resources = cfn["Resources"]
    function = props(resources, "AWS::Lambda::Function")
    layer_name, layer = one_of_type(resources, "AWS::Lambda::LayerVersion")
    assert function["Handler"] == "app.handler"
    assert function["Runtime"] == "python3.13"
    assert function["Architectures"] == ["arm64"]
    assert function["Code"]["S3Key"] == "functions/replay/"
    assert function["Layers"] == [{"Ref": layer_name}]
    assert function["Timeout"] == {"Ref": "FunctionTimeout"}
    assert function["MemorySize"] == {"Ref": "FunctionMemorySize"}
    assert layer["Properties"]["Content"]["S3Key"] == "layers/replay/"
    assert layer["Properties"]["CompatibleRuntimes"] == ["python3.13"]
    assert layer["Properties"]["CompatibleArchitectures"] == ["arm64"]


def test_layer_is_built_by_its_makefile_for_python313_arm64(
    sam_template: dict[str, Any], root: Path
) -> None:
    layer = sam_template["Resources"]["ReplayLayer"]
    assert layer["Type"] == "AWS::Serverless::LayerVersion"
    assert layer["Metadata"] == {"BuildMethod": "makefile"}
    makefile = (root / "layers" / "replay" / "Makefile").read_text()
    assert "build-ReplayLayer:" in makefile
    assert "--platform manylinux2014_aarch64" in makefile
    assert "--python-version 3.13" in makefile
    # Its modules: the list tests/template/test_layer_modules.py checks.
    assert re.search(r"(?m)^LAYER_MODULES := \$\(shell cat modules.txt\)$", makefile)


def test_layer_ships_powertools(root: Path) -> None:
    requirements = (root / "layers" / "replay" / "requirements.txt").read_text()
    assert re.search(r"(?im)^aws[-_]lambda[-_]powertools\b", requirements)


def test_layer_ships_nothing_of_the_cli(root: Path) -> None:
    # rich is a dependency of the package (the operator CLI), moto its demo extra: neither
    # belongs in the Lambda layer (tools/check_build.py checks the built layer too).
    requirements = (root / "layers" / "replay" / "requirements.txt").read_text()
    named = re.findall(r"(?m)^([A-Za-z0-9_.-]+)", requirements)
    assert [name.lower().replace("_", "-") for name in named] == ["aws-lambda-powertools"]


def test_recursive_loop_allowed(cfn: dict[str, Any]) -> None:
    # The function writes long-delay copies back into the DLQ it is triggered by.
    assert props(cfn["Resources"], "AWS::Lambda::Function")["RecursiveLoop"] == "Allow"


def test_one_log_group_with_retention_parameter(cfn: dict[str, Any]) -> None:
    resources = cfn["Resources"]
    log_group_name, log_group = one_of_type(resources, "AWS::Logs::LogGroup")
    assert log_group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionInDays"}
    logging = props(resources, "AWS::Lambda::Function")["LoggingConfig"]
    assert logging["LogGroup"] == {"Ref": log_group_name}


def test_environment_variables(cfn: dict[str, Any]) -> None:
    env = props(cfn["Resources"], "AWS::Lambda::Function")["Environment"]["Variables"]
    assert set(env) == {
        "MAIN_QUEUE_URL",
        "OPERATOR_QUEUE_URL",
        "ALLOWED_SOURCE_QUEUE_ARNS",
        "POWERTOOLS_SERVICE_NAME",
        "POWERTOOLS_METRICS_NAMESPACE",
        "OUTAGE_BREAKER_TABLE",
        "OUTAGE_BREAKER_RULE",
        "REPLAY_TARGET_ARNS",
        "INVOCATION_LEDGER_TABLE",
        "FOLLOW_TABLE",
        "FOLLOW_NOTICE_TOPIC_ARN",
        *ENV_FROM_PARAMETERS,
    }
    for variable, parameter in ENV_FROM_PARAMETERS.items():
        assert env[variable] == {"Ref": parameter}, variable
    assert env["ALLOWED_SOURCE_QUEUE_ARNS"] == {
        "Fn::Join": [",", {"Ref": "AllowedSourceQueueArns"}]
    }
    assert env["REPLAY_TARGET_ARNS"] == {"Fn::Join": [",", {"Ref": "ReplayTargetArns"}]}
    assert env["POWERTOOLS_SERVICE_NAME"] == "sqs-dlq-replay"
    assert env["POWERTOOLS_METRICS_NAMESPACE"] == "SqsDlqReplay"


def test_environment_defaults_match_the_design(cfn: dict[str, Any]) -> None:
    env = props(Stack(cfn).resources(), "AWS::Lambda::Function")["Environment"]["Variables"]
    stack = Stack(cfn)
    assert env["MAIN_QUEUE_URL"] == stack.queue_url("MainQueue")
    assert env["OPERATOR_QUEUE_URL"] == stack.queue_url("OperatorQueue")
    assert {k: env[k] for k in ENV_FROM_PARAMETERS} == {
        k: SETTING[k].default for k in ENV_FROM_PARAMETERS
    }
    assert env["ALLOWED_SOURCE_QUEUE_ARNS"] == ""


def test_existing_queue_urls_are_built_from_the_arns(cfn: dict[str, Any]) -> None:
    stack = Stack(cfn, {**EXISTING, "AllowedSourceQueueArns": EXISTING["MainQueueArn"]})
    env = props(stack.resources(), "AWS::Lambda::Function")["Environment"]["Variables"]
    base = f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}"
    assert env["MAIN_QUEUE_URL"] == f"{base}/orders"
    assert env["OPERATOR_QUEUE_URL"] == f"{base}/orders-operator"
    assert env["ALLOWED_SOURCE_QUEUE_ARNS"] == EXISTING["MainQueueArn"]
    outputs = stack.outputs()
    assert outputs["MainQueueUrl"] == f"{base}/orders"
    assert outputs["DeadLetterQueueUrl"] == f"{base}/orders-dlq"
    assert outputs["OperatorQueueUrl"] == f"{base}/orders-operator"
    assert outputs["DeadLetterQueueArn"] == EXISTING["DeadLetterQueueArn"]


def test_each_queue_url_comes_from_its_own_arn(cfn: dict[str, Any]) -> None:
    parameters = {
        "MainQueueArn": "arn:aws:sqs:eu-west-1:111111111111:main",
        "DeadLetterQueueArn": "arn:aws:sqs:eu-west-2:222222222222:dlq",
        "OperatorQueueArn": "arn:aws:sqs:ap-south-1:333333333333:operator",
    }
    stack = Stack(cfn, parameters, region="eu-west-1")
    outputs = stack.outputs()
    assert outputs["MainQueueUrl"] == "https://sqs.eu-west-1.amazonaws.com/111111111111/main"
    assert outputs["DeadLetterQueueUrl"] == "https://sqs.eu-west-2.amazonaws.com/222222222222/dlq"
    assert (
        outputs["OperatorQueueUrl"] == "https://sqs.ap-south-1.amazonaws.com/333333333333/operator"
    )
    env = props(stack.resources(), "AWS::Lambda::Function")["Environment"]["Variables"]
    assert env["MAIN_QUEUE_URL"] == outputs["MainQueueUrl"]
    assert env["OPERATOR_QUEUE_URL"] == outputs["OperatorQueueUrl"]


# -- event source ------------------------------------------------------------------------


def test_event_source_mapping_polls_the_dlq_with_parameters(cfn: dict[str, Any]) -> None:
    esm = props(cfn["Resources"], "AWS::Lambda::EventSourceMapping")
    function_name, _ = one_of_type(cfn["Resources"], "AWS::Lambda::Function")
    assert esm["FunctionName"] == {"Ref": function_name}
    assert esm["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert esm["BatchSize"] == {"Ref": "BatchSize"}
    on_demand = props(Stack(cfn).resources(), "AWS::Lambda::EventSourceMapping")
    assert on_demand["ScalingConfig"] == {"MaximumConcurrency": "5"}
    assert "ProvisionedPollerConfig" not in on_demand
    assert "MetricsConfig" not in on_demand
    assert esm["MaximumBatchingWindowInSeconds"] == {
        "Fn::If": [
            "DeadLetterQueueIsFifo",
            {"Ref": "AWS::NoValue"},
            {"Ref": "MaximumBatchingWindowInSeconds"},
        ]
    }
    created = Stack(cfn)
    assert created.resolve(esm["EventSourceArn"]) == created.queue_arn("DeadLetterQueue")
    existing = Stack(cfn, EXISTING).resolve(esm["EventSourceArn"])
    assert existing == EXISTING["DeadLetterQueueArn"]


# -- IAM ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "parameters",
    [
        {},
        {"QueueType": "fifo"},
        EXISTING,
        {**EXISTING, "AllowedSourceQueueArns": f"arn:aws:sqs:{REGION}:{ACCOUNT}:other"},
    ],
    ids=["create", "create-fifo", "existing", "existing-shared"],
)
def test_no_sqs_permission_on_every_resource(
    cfn: dict[str, Any], parameters: dict[str, str]
) -> None:
    resources = Stack(cfn, parameters).resources()
    roles = [r for r in resources.values() if r["Type"] == "AWS::IAM::Role"]
    assert roles
    for role in roles:
        managed = [str(a) for a in role["Properties"].get("ManagedPolicyArns", [])]
        # SAM's `Events: SQS` would attach AWSLambdaSQSQueueExecutionRole ("Resource": "*").
        assert not [a for a in managed if "SQS" in a.upper()], managed
        assert all(a.endswith(":policy/service-role/AWSLambdaBasicExecutionRole") for a in managed)
        for statement in statements(role):
            assert statement["Effect"] == "Allow"
            if not any(a.startswith("sqs:") for a in actions(statement)):
                continue
            targets = statement["Resource"]
            for target in targets if isinstance(targets, list) else [targets]:
                assert isinstance(target, str)
                assert "*" not in target, target
                assert target.startswith("arn:aws:sqs:"), target


def test_sqs_grants_are_exactly_the_queues_the_function_uses(cfn: dict[str, Any]) -> None:
    def queue_arn(name: str) -> str:
        return f"arn:aws:sqs:{REGION}:{ACCOUNT}:{name}"

    sources = "arn:aws:sqs:us-east-1:123456789012:a,arn:aws:sqs:us-east-1:123456789012:b"
    stack = Stack(cfn, {**EXISTING, "AllowedSourceQueueArns": sources})
    grants = sqs_queue_grants(stack.resources())
    poll = {
        "sqs:ReceiveMessage",
        "sqs:DeleteMessage",
        "sqs:ChangeMessageVisibility",
        "sqs:GetQueueAttributes",
    }
    assert poll <= grants[queue_arn("orders-dlq")]
    assert "sqs:SendMessage*" in grants[queue_arn("orders-dlq")]
    assert grants[queue_arn("orders")] == {"sqs:SendMessage*"}
    assert grants[queue_arn("orders-operator")] == {"sqs:SendMessage*"}
    assert grants[queue_arn("a")] == grants[queue_arn("b")] == {"sqs:SendMessage"}
    assert set(grants) == {
        queue_arn(n) for n in ("orders", "orders-dlq", "orders-operator", "a", "b")
    }


def test_allowed_sources_statement_only_when_listed(cfn: dict[str, Any]) -> None:
    grants = sqs_queue_grants(Stack(cfn, EXISTING).resources())
    assert set(grants) == {
        f"arn:aws:sqs:{REGION}:{ACCOUNT}:{n}" for n in ("orders", "orders-dlq", "orders-operator")
    }


def test_created_queues_are_granted_by_their_names(cfn: dict[str, Any]) -> None:
    stack = Stack(cfn)
    grants = sqs_queue_grants(stack.resources())
    arns = {name: stack.queue_arn(name) for name in QUEUES}
    assert set(grants) == set(arns.values())
    assert "sqs:ReceiveMessage" in grants[arns["DeadLetterQueue"]]
    assert "sqs:SendMessage*" in grants[arns["DeadLetterQueue"]]
    assert grants[arns["MainQueue"]] == grants[arns["OperatorQueue"]] == {"sqs:SendMessage*"}


def test_sam_template_uses_policy_templates_and_inline_statements_only_where_none_fits(
    sam_template: dict[str, Any],
) -> None:
    policies = sam_template["Resources"]["ReplayFunction"]["Properties"]["Policies"]
    kinds = []
    for entry in policies:
        policy = entry
        if "Fn::If" in entry:
            _, policy, otherwise = entry["Fn::If"]
            assert otherwise == {"Ref": "AWS::NoValue"}
        if "Statement" in policy:
            # Inline only where no policy template fits: a list of queues or targets (a
            # template takes one name), kms:GenerateDataKey through SQS and SNS only
            # (KMSDecryptPolicy grants Decrypt only, with no kms:ViaService condition),
            # rules not known in advance, and the ledger's four actions on its own items.
            (statement,) = policy["Statement"]
            kinds.append(f"Statement:{statement['Sid']}")
        else:
            (kind,) = policy
            kinds.append(kind)
    assert sorted(kinds) == [
        "SNSPublishMessagePolicy",
        "SQSPollerPolicy",
        "SQSSendMessagePolicy",
        "SQSSendMessagePolicy",
        "SQSSendMessagePolicy",
        "Statement:FollowCounts",
        "Statement:InvocationLedger",
        "Statement:InvokeReplayTargetFunctions",
        "Statement:PublishFollowNotices",
        "Statement:PublishToReplayTargetTopics",
        "Statement:PutEventsOnReplayTargetBuses",
        "Statement:ReadTheRulesTargets",
        "Statement:SendToAllowedSourceQueues",
        "Statement:SendToReplayTargetQueues",
        "Statement:StartReplayTargetStateMachines",
        "Statement:UseQueueKmsKey",
    ]


# -- partitions, outputs, SAR ------------------------------------------------------------


def test_every_arn_is_partition_aware(cfn: dict[str, Any], sam_template: dict[str, Any]) -> None:
    # As written: no hard-coded ARN outside the parameters' patterns.
    for path, node in walk({k: v for k, v in sam_template.items() if k != "Parameters"}):
        if isinstance(node, str):
            assert "arn:aws:" not in node, path
            assert "arn:aws-" not in node, path
    # Transformed: literal ARNs exist only where SAM fills in the managed policy ARN for the
    # region it transforms in (the partition is right there); everything else is Fn::Sub with
    # ${AWS::Partition} or comes from the queues/parameters.
    for path, node in walk({k: v for k, v in cfn.items() if k != "Parameters"}):
        if not isinstance(node, str) or "arn:" not in node:
            continue
        if "ManagedPolicyArns" in path:
            assert node.startswith("arn:aws:iam::aws:policy/")
        else:
            assert node.startswith("arn:${AWS::Partition}:"), (path, node)
            assert "Fn::Sub" in path[-3:], path  # !Sub text, or [text, variables]


def test_generated_arns_follow_the_region_partition(root: Path) -> None:
    china = transform_template(root / "template.yaml", region="cn-north-1")
    role = next(r for r in china["Resources"].values() if r["Type"] == "AWS::IAM::Role")
    arns = role["Properties"]["ManagedPolicyArns"]
    assert arns
    assert all(str(a).startswith("arn:aws-cn:") for a in arns)


def test_outputs_are_complete(cfn: dict[str, Any]) -> None:
    assert set(cfn["Outputs"]) == OUTPUTS
    stack = Stack(cfn)
    created = stack.outputs()
    # tests/template/test_operations.py; DeadLetterTargetArn: tests/template/test_kinds.py
    optional = {"AlarmTopicArn", "DashboardName", "DeadLetterTargetArn"}
    assert set(created) == OUTPUTS - optional
    for name in QUEUES:
        assert created[f"{name}Url"] == stack.queue_url(name)
        assert created[f"{name}Arn"] == stack.queue_arn(name)
    assert set(Stack(cfn, EXISTING).outputs()) == OUTPUTS - optional


def test_sar_metadata_has_no_intrinsic_functions(cfn: dict[str, Any], root: Path) -> None:
    sar = cfn["Metadata"]["AWS::ServerlessRepo::Application"]
    for path, node in walk(sar):
        if isinstance(node, dict):
            assert not [k for k in node if k == "Ref" or k.startswith(("Fn::", "!"))], path
        assert not (isinstance(node, str) and "${" in node), path
    assert sar["Name"] == "sqs-dlq-replay"
    assert sar["SpdxLicenseId"] == "MIT-0"
    assert sar["LicenseUrl"] == "LICENSE"
    assert sar["ReadmeUrl"] == "README.md"
    assert re.fullmatch(r"\d+\.\d+\.\d+", sar["SemanticVersion"])
    assert re.fullmatch(r"[a-z0-9](([a-z0-9]|-(?!-))*[a-z0-9])?", sar["Author"])
    assert 1 <= len(sar["Labels"]) <= 10
    assert all(re.fullmatch(r"[a-zA-Z0-9+\-_:/@]{1,127}", label) for label in sar["Labels"])
    assert len(sar["Description"]) <= 256
    for url in ("HomePageUrl", "SourceCodeUrl"):
        assert sar[url].startswith("https://")
    assert "MIT No Attribution" in (root / "LICENSE").read_text()


# -- examples and configuration ------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "given"),
    [
        ("nested-app.yaml", {"MainQueueArn", "DeadLetterQueueArn", "OperatorQueueArn"}),
        (
            "nested-app-serverless.yaml",
            {"DeadLetterQueueArn", "OperatorQueueArn", "DeadLetterQueueKind", "ReplayTargetArns"},
        ),
    ],
)
def test_nested_app_passes_real_parameters_and_reads_real_outputs(
    root: Path, cfn: dict[str, Any], name: str, given: set[str]
) -> None:
    example = load_template(root / "examples" / name)
    apps = {
        n: r for n, r in example["Resources"].items() if r["Type"] == "AWS::Serverless::Application"
    }
    ((app_name, app),) = apps.items()
    assert app["Properties"]["Location"] == "../template.yaml"
    passed = app["Properties"]["Parameters"]
    assert set(passed) <= set(cfn["Parameters"])
    assert given <= set(passed)
    for path, node in walk(example["Outputs"]):
        if isinstance(node, dict) and "Fn::GetAtt" in node:
            resource, attribute = node["Fn::GetAtt"]
            assert resource == app_name, path
            assert attribute.removeprefix("Outputs.") in cfn["Outputs"], path
    replay_outputs = [n for n, o in example["Outputs"].items() if "Fn::GetAtt" in o["Value"]]
    assert "ReplayFunctionName" in replay_outputs


def test_samconfig_deploys_create_everything_mode_without_a_question(root: Path) -> None:
    """`make build && .venv/bin/sam deploy`, the README's first deploy, needs no answer: a stack
    name, an artifact bucket, the capabilities (CAPABILITY_RESOURCE_POLICY is SAR's only,
    CloudFormation refuses it), no change set prompt, no guided mode, and a default for every
    parameter."""
    config = tomllib.loads((root / "samconfig.toml").read_text())
    default = config["default"]
    deploy = default["deploy"]["parameters"]
    assert deploy["stack_name"] == "sqs-dlq-replay"
    assert set(deploy["capabilities"].split()) == {"CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"}
    assert deploy["resolve_s3"] is True
    assert deploy["confirm_changeset"] is False
    assert "guided" not in deploy
    assert "parameter_overrides" not in deploy
    parameters = load_template(root / "template.yaml")["Parameters"]
    assert [name for name, p in parameters.items() if "Default" not in p] == []
    readme = (root / "README.md").read_text()
    assert "\n```bash\nmake build && .venv/bin/sam deploy\n```\n" in readme
    assert default["build"]["parameters"]["cached"] is False
    assert default["validate"]["parameters"]["lint"] is True
