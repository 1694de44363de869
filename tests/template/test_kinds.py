"""DeadLetterQueueKind and ReplayTargetArns: create-everything without a main queue for the
serverless kinds, the DLQ's output and queue policy, the ledger in the stack's table, and IAM
for exactly the listed targets."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .cfn import Stack
from .test_template import ACCOUNT, EXISTING, REGION, props, statements

FUNCTION = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:orders-handler"
ALIAS = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:orders-handler:live"
QUEUE = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-target"
FIFO_QUEUE = f"arn:aws:sqs:{REGION}:{ACCOUNT}:orders-target.fifo"
TOPIC = f"arn:aws:sns:{REGION}:{ACCOUNT}:orders-topic"
STATE_MACHINE = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:orders-flow"
BUS = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/orders"
EVERY_TARGET = [FUNCTION, QUEUE, TOPIC, STATE_MACHINE, BUS]
TARGET_ACTIONS = {
    "lambda:InvokeFunction",
    "sqs:SendMessage",
    "sns:Publish",
    "states:StartExecution",
    "events:PutEvents",
    "events:ListTargetsByRule",
}
LEDGER_ACTIONS = [
    "dynamodb:BatchGetItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:GetItem",
    "dynamodb:PutItem",
]
RULES = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/*"


def environment(stack: Stack) -> dict[str, Any]:
    variables: dict[str, Any] = props(stack.resources(), "AWS::Lambda::Function")["Environment"][
        "Variables"
    ]
    return variables


def function_statements(stack: Stack) -> dict[str, dict[str, Any]]:
    """The replay function's role's statements by Sid (the policy templates' have none)."""
    role = stack.resources()["ReplayFunctionRole"]
    return {s["Sid"]: s for s in statements(role) if "Sid" in s}


def target_statements(stack: Stack) -> dict[str, list[str]]:
    """Action -> resources, for the statements that reach the replay targets."""
    found: dict[str, list[str]] = {}
    for statement in function_statements(stack).values():
        action = statement["Action"]
        if isinstance(action, str) and action in TARGET_ACTIONS:
            resource = statement["Resource"]
            found[action] = resource if isinstance(resource, list) else [resource]
    return found


def kind(value: str, *targets: str, **more: str) -> dict[str, str]:
    return {"DeadLetterQueueKind": value, "ReplayTargetArns": ",".join(targets), **more}


# -- parameters ------------------------------------------------------------------------------


def test_the_kind_is_a_choice_defaulting_to_sqs(cfn: dict[str, Any]) -> None:
    spec = cfn["Parameters"]["DeadLetterQueueKind"]
    assert spec["Default"] == "sqs"
    assert spec["AllowedValues"] == ["sqs", "lambda", "eventbridge", "any"]
    assert Stack(cfn, {"DeadLetterQueueKind": "sns"}).parameter_errors()
    targets = cfn["Parameters"]["ReplayTargetArns"]
    assert (targets["Type"], targets["Default"]) == ("CommaDelimitedList", "")


@pytest.mark.parametrize(
    ("arn", "ok"),
    [
        (FUNCTION, True),
        (ALIAS, True),
        (f"{FUNCTION}:7", True),
        (f"{FUNCTION}:$LATEST", True),
        (QUEUE, True),
        (FIFO_QUEUE, True),
        (TOPIC, True),
        (f"{TOPIC}.fifo", True),
        (STATE_MACHINE, True),
        (BUS, True),
        (f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/aws.partner/saas.com/123/orders", True),
        ("arn:aws-cn:lambda:cn-north-1:123456789012:function:f", True),
        (f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:" + "f" * 65, False),
        (f"{FUNCTION}:live:extra", False),
        (f"arn:aws:events:{REGION}:{ACCOUNT}:rule/orders", False),
        (f"arn:aws:states:{REGION}:{ACCOUNT}:execution:orders-flow:1", False),
        (f"{TOPIC}:0b3c5f6e-1111-2222-3333-444455556666", False),
        (f"arn:aws:s3:::{ACCOUNT}-bucket", False),
        (f"arn:aws:kinesis:{REGION}:{ACCOUNT}:stream/orders", False),
        (f"arn:aws:lambda:{REGION}:1234:function:f", False),
        ("orders-handler", False),
    ],
)
def test_replay_targets_accept_the_services_the_replay_delivers_to(
    cfn: dict[str, Any], arn: str, ok: bool
) -> None:
    stack = Stack(cfn, kind("any", arn, QUEUE))
    assert (stack.parameter_errors() == []) is ok


# -- create-everything for the serverless kinds ----------------------------------------------


@pytest.mark.parametrize("value", ["lambda", "eventbridge", "any"])
def test_create_everything_makes_no_main_queue_and_outputs_the_dlq(
    cfn: dict[str, Any], value: str
) -> None:
    stack = Stack(cfn, kind(value, FUNCTION))
    assert stack.failed_rules() == []
    resources = stack.resources()
    queues = {n for n, r in resources.items() if r["Type"] == "AWS::SQS::Queue"}
    assert queues == {"DeadLetterQueue", "OperatorQueue"}
    outputs = stack.outputs()
    assert outputs["DeadLetterTargetArn"] == stack.queue_arn("DeadLetterQueue")
    assert outputs["DeadLetterQueueArn"] == stack.queue_arn("DeadLetterQueue")
    assert "MainQueueUrl" not in outputs
    assert "MainQueueArn" not in outputs
    env = environment(stack)
    assert env["MAIN_QUEUE_URL"] == ""
    assert env["DLQ_KIND"] == value
    # The safety net stays: DLQ -> operator queue.
    dlq = resources["DeadLetterQueue"]["Properties"]
    assert dlq["RedrivePolicy"]["deadLetterTargetArn"] == stack.queue_arn("OperatorQueue")
    # No SQS queue may dead-letter into it, except with `any` (sqs records accepted too).
    permission = "allowAll" if value == "any" else "denyAll"
    assert dlq["RedriveAllowPolicy"] == {"redrivePermission": permission}
    # Nothing refers to the queue that is not there.
    assert "teststack-main" not in str(resources)


def test_the_sqs_kind_keeps_its_main_queue_and_has_no_target_output(cfn: dict[str, Any]) -> None:
    stack = Stack(cfn)
    assert "MainQueue" in stack.resources()
    assert "DeadLetterTargetArn" not in stack.outputs()
    assert environment(stack)["DLQ_KIND"] == "sqs"
    assert environment(stack)["REPLAY_TARGET_ARNS"] == ""


def test_an_existing_dlq_of_a_serverless_kind_needs_no_main_queue_nor_sources(
    cfn: dict[str, Any],
) -> None:
    parameters = {k: v for k, v in EXISTING.items() if k != "MainQueueArn"}
    assert "SharedDeadLetterQueueNeedsSources" in Stack(cfn, parameters).failed_rules()
    stack = Stack(cfn, {**parameters, **kind("lambda", FUNCTION)})
    assert stack.failed_rules() == []
    assert stack.outputs()["DeadLetterTargetArn"] == EXISTING["DeadLetterQueueArn"]
    assert not [r for r in stack.resources().values() if r["Type"] == "AWS::SQS::Queue"]


def test_the_serverless_kinds_create_a_standard_dlq(cfn: dict[str, Any]) -> None:
    failed = Stack(cfn, kind("eventbridge", BUS, QueueType="fifo")).failed_rules()
    assert failed == ["CreatedServerlessDeadLetterQueueIsStandard"]
    assert Stack(cfn, {"QueueType": "fifo"}).failed_rules() == []


def test_targets_are_refused_with_the_sqs_kind(cfn: dict[str, Any]) -> None:
    failed = Stack(cfn, kind("sqs", FUNCTION)).failed_rules()
    assert failed == ["ReplayTargetsNeedAServerlessKind"]


def test_the_environment_names_the_kind_and_the_targets(cfn: dict[str, Any]) -> None:
    env = environment(Stack(cfn, kind("any", FUNCTION, QUEUE)))
    assert env["DLQ_KIND"] == "any"
    assert env["REPLAY_TARGET_ARNS"] == f"{FUNCTION},{QUEUE}"


# -- the DLQ's queue policy ------------------------------------------------------------------


def queue_policies(stack: Stack) -> list[dict[str, Any]]:
    return [
        r["Properties"] for r in stack.resources().values() if r["Type"] == "AWS::SQS::QueuePolicy"
    ]


@pytest.mark.parametrize("value", ["eventbridge", "any"])
def test_eventbridge_rules_of_this_account_and_region_may_dead_letter_into_a_created_dlq(
    cfn: dict[str, Any], value: str
) -> None:
    stack = Stack(cfn, kind(value, QUEUE))
    (policy,) = queue_policies(stack)
    assert policy["Queues"] == [stack.queue_url("DeadLetterQueue")]
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement == {
        "Sid": "EventBridgeRuleTargetsDeadLetterHere",
        "Effect": "Allow",
        "Principal": {"Service": "events.amazonaws.com"},
        "Action": "sqs:SendMessage",
        "Resource": stack.queue_arn("DeadLetterQueue"),
        "Condition": {"ArnLike": {"aws:SourceArn": RULES}},
    }


def test_lambda_needs_no_queue_policy_and_existing_queues_get_none(cfn: dict[str, Any]) -> None:
    # Lambda sends DeadLetterConfig and OnFailure records with the function's own role.
    assert queue_policies(Stack(cfn, kind("lambda", FUNCTION))) == []
    existing = {k: v for k, v in EXISTING.items() if k != "MainQueueArn"}
    assert queue_policies(Stack(cfn, {**existing, **kind("eventbridge", QUEUE)})) == []


def test_tls_and_eventbridge_share_the_one_policy_of_the_created_queues(
    cfn: dict[str, Any],
) -> None:
    stack = Stack(cfn, kind("eventbridge", QUEUE, EnforceTls="true"))
    (policy,) = queue_policies(stack)
    created = ("DeadLetterQueue", "OperatorQueue")
    assert policy["Queues"] == [stack.queue_url(q) for q in created]
    deny, allow = policy["PolicyDocument"]["Statement"]
    assert deny["Sid"] == "DenyRequestsWithoutTls"
    assert deny["Resource"] == [stack.queue_arn(q) for q in created]
    assert allow["Sid"] == "EventBridgeRuleTargetsDeadLetterHere"


# -- the ledger in the stack's table ---------------------------------------------------------


def test_the_table_exists_for_the_ledger_with_the_breaker_off(cfn: dict[str, Any]) -> None:
    stack = Stack(cfn, kind("eventbridge", QUEUE, OutageBreaker="off"))
    resources = stack.resources()
    assert resources["OutageBreakerTable"]["Type"] == "AWS::DynamoDB::Table"
    # Only the table: the breaker's rule, policy and alarm stay off.
    assert not [n for n in resources if n.startswith("OutageBreaker") and n != "OutageBreakerTable"]
    env = environment(stack)
    assert env["INVOCATION_LEDGER_TABLE"] == "{Ref:OutageBreakerTable}"
    assert "OUTAGE_BREAKER_TABLE" not in env
    ledger = function_statements(stack)["InvocationLedger"]
    assert ledger["Action"] == LEDGER_ACTIONS
    assert ledger["Resource"] == "{GetAtt:OutageBreakerTable.Arn}"
    assert ledger["Condition"] == {
        "ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["invocation#*"]}
    }


def test_the_sqs_kind_has_no_ledger(cfn: dict[str, Any]) -> None:
    on = Stack(cfn)
    assert "INVOCATION_LEDGER_TABLE" not in environment(on)
    assert "InvocationLedger" not in function_statements(on)
    off = Stack(cfn, {"OutageBreaker": "off"})
    assert "InvocationLedger" not in function_statements(off)
    both = Stack(cfn, kind("lambda", FUNCTION))
    assert environment(both)["INVOCATION_LEDGER_TABLE"] == environment(both)["OUTAGE_BREAKER_TABLE"]


# -- IAM: exactly the listed targets ---------------------------------------------------------


@pytest.mark.parametrize(
    "parameters",
    [{}, kind("lambda"), kind("any"), {**EXISTING, "DeadLetterQueueKind": "eventbridge"}],
    ids=["sqs", "lambda", "any", "existing-eventbridge"],
)
def test_no_target_statement_without_targets(
    cfn: dict[str, Any], parameters: dict[str, str]
) -> None:
    assert target_statements(Stack(cfn, parameters)) == {}


def test_each_action_names_exactly_the_listed_targets(cfn: dict[str, Any]) -> None:
    stack = Stack(cfn, kind("any", *EVERY_TARGET))
    grants = target_statements(stack)
    assert grants == {
        # An unqualified function allows its versions and aliases: <arn>:*.
        "lambda:InvokeFunction": EVERY_TARGET + [f"{arn}:*" for arn in EVERY_TARGET],
        "sqs:SendMessage": EVERY_TARGET,
        "sns:Publish": EVERY_TARGET,
        "states:StartExecution": EVERY_TARGET,
        "events:PutEvents": EVERY_TARGET,
        # Not a target: the rules whose targets an EventBridge record names (any kind).
        "events:ListTargetsByRule": [RULES],
    }
    assert all(s["Effect"] == "Allow" for s in function_statements(stack).values())


@pytest.mark.parametrize(
    ("targets", "actions"),
    [
        ([FUNCTION], {"lambda:InvokeFunction"}),
        ([ALIAS], {"lambda:InvokeFunction"}),
        ([QUEUE], {"sqs:SendMessage"}),
        ([TOPIC, BUS], {"sns:Publish", "events:PutEvents"}),
        ([STATE_MACHINE], {"states:StartExecution"}),
    ],
)
def test_a_statement_only_for_the_services_listed(
    cfn: dict[str, Any], targets: list[str], actions: set[str]
) -> None:
    grants = target_statements(Stack(cfn, kind("eventbridge", *targets)))
    assert set(grants) == actions | {"events:ListTargetsByRule"}  # the rules: below
    del grants["events:ListTargetsByRule"]
    for action, resources in grants.items():
        versions = [f"{t}:*" for t in targets] if action.startswith("lambda:") else []
        assert resources == targets + versions, action


@pytest.mark.parametrize("dlq_kind", ["eventbridge", "any"])
@pytest.mark.parametrize("target", [FIFO_QUEUE, QUEUE, FUNCTION, TOPIC, STATE_MACHINE, BUS])
def test_the_eventbridge_kind_reads_the_rules_of_this_account_and_region(
    cfn: dict[str, Any], dlq_kind: str, target: str
) -> None:
    """Every EventBridge record's target is delivered as its rule configures it (input
    settings, a FIFO queue's group id): whatever the target's service. rule/* covers a custom
    bus's rules too (rule/<bus>/<name>): IAM's * matches slashes."""
    grants = target_statements(Stack(cfn, kind(dlq_kind, target)))
    assert grants["events:ListTargetsByRule"] == [RULES]


def test_no_rule_is_read_without_the_eventbridge_kind_or_without_targets(
    cfn: dict[str, Any],
) -> None:
    # The lambda kind's records name no rule; with no target every record is parked unsent.
    assert "events:ListTargetsByRule" not in target_statements(
        Stack(cfn, kind("lambda", FIFO_QUEUE, FUNCTION))
    )
    assert "events:ListTargetsByRule" not in target_statements(Stack(cfn, kind("eventbridge")))


def test_a_dozen_targets_fit_in_iams_limit_on_a_roles_inline_policies(cfn: dict[str, Any]) -> None:
    """deploying.md says a dozen ARNs fit: IAM allows a role 10,240 characters of inline
    policies in all (white space not counted), and the list is repeated per action."""
    services = [FUNCTION, QUEUE, TOPIC, STATE_MACHINE, BUS]
    targets = [f"{services[i % 5]}-{i:02d}" for i in range(12)]
    stack = Stack(
        cfn,
        kind(
            "any",
            *targets,
            QueueKmsKeyArn=f"arn:aws:kms:{REGION}:{ACCOUNT}:key/1234abcd-12ab-34cd-56ef-1234567890ab",
            ParkNotificationTopicArn=f"{TOPIC}-notices",
            AllowedSourceQueueArns=f"{QUEUE}-a,{QUEUE}-b",
        ),
    )
    resources = stack.resources()
    documents = [
        p["PolicyDocument"] for p in resources["ReplayFunctionRole"]["Properties"]["Policies"]
    ]
    documents.append(resources["OutageBreakerPolicy"]["Properties"]["PolicyDocument"])
    size = sum(len(json.dumps(d, separators=(",", ":"))) for d in documents)
    # Resources left symbolic here ({GetAtt:...}) are shorter than their ARNs: keep 1,000 spare.
    assert size < 10_240 - 1_000, size
