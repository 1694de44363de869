"""`--stack NAME`: the queues, the function and its settings from a deployed stack's outputs."""

from __future__ import annotations

from typing import TYPE_CHECKING

import boto3
import pytest
from dlq_replay.ops.stack import STACK_OUTPUTS

from .stack import FUNCTION_ENVIRONMENT, deploy, template_output_names
from .support import assert_one_line_error, depth, park, run_cli

if TYPE_CHECKING:
    from mypy_boto3_cloudformation import CloudFormationClient
    from mypy_boto3_sqs import SQSClient


@pytest.fixture
def cfn(aws: None) -> CloudFormationClient:
    return boto3.client("cloudformation")


def test_the_output_names_are_those_of_template_yaml() -> None:
    assert set(STACK_OUTPUTS.values()) <= template_output_names()


def test_status_from_stack_outputs(
    capsys: pytest.CaptureFixture[str], cfn: CloudFormationClient, sqs: SQSClient
) -> None:
    outputs = deploy(cfn, "orders-replay")
    park(sqs, outputs["OperatorQueueUrl"], ["a", "b"])

    result = run_cli(capsys, "status", "--stack", "orders-replay", "--json")

    assert result.code == 0, result
    report = result.json()
    assert report["stack"] == "orders-replay"
    urls = {q["role"]: q["url"] for q in report["queues"]}
    assert urls == {
        "main": outputs["MainQueueUrl"],
        "dlq": outputs["DeadLetterQueueUrl"],
        "operator": outputs["OperatorQueueUrl"],
    }
    assert next(q for q in report["queues"] if q["role"] == "operator")["visible"] == 2
    source = report["event_source"]
    assert source["function_name"] == outputs["ReplayFunctionName"]
    assert (source["found"], source["state"], source["enabled"]) == (True, "Enabled", True)
    table = run_cli(capsys, "status", "--stack", "orders-replay")
    assert "on the DLQ is Enabled" in table.out


def test_explicit_urls_win_over_the_stack(
    capsys: pytest.CaptureFixture[str], cfn: CloudFormationClient, sqs: SQSClient
) -> None:
    deploy(cfn, "orders-replay")
    other = sqs.create_queue(QueueName="elsewhere")["QueueUrl"]

    result = run_cli(
        capsys, "status", "--stack", "orders-replay", "--operator-queue-url", other, "--json"
    )

    operator = next(q for q in result.json()["queues"] if q["role"] == "operator")
    assert operator["url"] == other


def test_existing_queue_mode_without_a_main_queue(
    capsys: pytest.CaptureFixture[str], cfn: CloudFormationClient
) -> None:
    """A shared DLQ: the stack has no MainQueueUrl output, so `--to main` cannot work."""
    deploy(cfn, "shared", create_main=False)

    status = run_cli(capsys, "status", "--stack", "shared", "--json")
    redrive = run_cli(capsys, "redrive", "--stack", "shared", "--dry-run")

    assert [q["role"] for q in status.json()["queues"]] == ["dlq", "operator"]
    assert_one_line_error(redrive, 2, "main queue is unknown")


def test_peek_and_redrive_use_the_function_count_attribute(
    capsys: pytest.CaptureFixture[str], cfn: CloudFormationClient, sqs: SQSClient
) -> None:
    outputs = deploy(cfn, "orders-replay")
    operator = outputs["OperatorQueueUrl"]
    sqs.send_message(
        QueueUrl=operator,
        MessageBody="x",
        MessageAttributes={
            "orders-replays": {"DataType": "Number", "StringValue": "4"},
            "dlq-replay-park-reason": {"DataType": "String", "StringValue": "max-attempts"},
        },
    )

    peeked = run_cli(
        capsys, "peek", "operator", "--stack", "orders-replay", "--wait-seconds", "0", "--json"
    )
    moved = run_cli(
        capsys,
        "redrive",
        "--stack",
        "orders-replay",
        "--reset-count",
        "--wait-seconds",
        "0",
        "--json",
    )

    assert peeked.json()["messages"][0]["replay_count"] == 4
    assert moved.json()["moved"] == 1
    (copy,) = sqs.receive_message(QueueUrl=outputs["MainQueueUrl"], MessageAttributeNames=["All"])[
        "Messages"
    ]
    assert "orders-replays" not in copy.get("MessageAttributes", {})
    assert depth(sqs, operator) == (0, 0)


def test_plan_takes_the_function_settings(
    capsys: pytest.CaptureFixture[str], cfn: CloudFormationClient
) -> None:
    deploy(cfn, "orders-replay")

    result = run_cli(capsys, "plan", "--stack", "orders-replay", "--json")

    assert result.code == 0, result
    settings = result.json()["settings"]
    assert settings["max_attempts"] == int(FUNCTION_ENVIRONMENT["MAX_ATTEMPTS"])
    assert settings["base_seconds"] == int(FUNCTION_ENVIRONMENT["BACKOFF_BASE_SECONDS"])
    assert settings["multiplier"] == float(FUNCTION_ENVIRONMENT["BACKOFF_MULTIPLIER"])
    assert settings["cap_seconds"] == int(FUNCTION_ENVIRONMENT["BACKOFF_CAP_SECONDS"])
    assert settings["jitter"] == FUNCTION_ENVIRONMENT["JITTER"]
    assert settings["from"].startswith("function orders-replay-")
    overridden = run_cli(
        capsys, "plan", "--stack", "orders-replay", "--max-attempts", "2", "--json"
    )
    assert overridden.json()["settings"]["max_attempts"] == 2


def test_missing_stack_is_one_line(capsys: pytest.CaptureFixture[str], aws: None) -> None:
    for command in ("status", "peek", "redrive", "plan"):
        argv = [command, "operator"] if command == "peek" else [command]
        result = run_cli(capsys, *argv, "--stack", "nope")
        assert_one_line_error(result, 1, "Stack with id nope does not exist")


def test_a_stack_that_is_not_ours(
    capsys: pytest.CaptureFixture[str], cfn: CloudFormationClient
) -> None:
    cfn.create_stack(
        StackName="unrelated",
        TemplateBody='{"Resources": {"Q": {"Type": "AWS::SQS::Queue"}}}',
    )
    result = run_cli(capsys, "status", "--stack", "unrelated")
    assert_one_line_error(result, 1, "is it sqs-dlq-replay?")
