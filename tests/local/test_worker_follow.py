"""`dlq-replay worker` counts the replay's recovery as the Lambda does: into the stack's table
with `--audit-table` (or `--stack`, as the audit finds the table), else into the local file,
saying so in one line at start. A real subprocess on the emulator's endpoint."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from dlq_replay.demo.emulator import create_queues
from dlq_replay.follow.journal import FileFollowStore
from dlq_replay.follow.recovery import RecoverySummary
from dlq_replay.follow.tables import DynamoFollowStore
from dlq_replay.follow.tag import FOLLOW_ATTRIBUTE, follow_value
from integration.harness import COUNT, breaker_table

from .support import clean_env, worker_command
from .test_worker import OutputReader

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.moto_only(reason="the DynamoDB and CloudFormation of moto's server")

MAX_ATTEMPTS = 3
PLAIN, PARKED = 4, 2
TABLE = "worker-table"


def fill_dlq(sqs: SQSClient, dlq_url: str) -> None:
    """PLAIN records that failed first (replayed as attempt 1) and PARKED at the last attempt."""
    for index in range(PLAIN):
        sqs.send_message(QueueUrl=dlq_url, MessageBody=f"plain-{index}")
    for index in range(PARKED):
        sqs.send_message(
            QueueUrl=dlq_url,
            MessageBody=f"done-{index}",
            MessageAttributes={COUNT: {"DataType": "Number", "StringValue": str(MAX_ATTEMPTS)}},
        )


def run_worker(
    endpoint: str,
    sqs: SQSClient,
    prefix: str,
    *extra: str,
    more: Callable[[SQSClient, str], int] | None = None,
) -> list[str]:
    """The worker until the records are done (`more(sqs, dlq_url)` adds some and says how
    many); its stderr lines."""
    queues = create_queues(sqs, prefix=prefix)
    fill_dlq(sqs, queues.dlq)
    added = more(sqs, queues.dlq) if more is not None else 0
    command = worker_command(
        queues,
        endpoint,
        "--region",
        "us-east-1",
        "--wait-seconds",
        "1",
        "--max-attempts",
        str(MAX_ATTEMPTS),
        "--no-breaker",
        *extra,
    )
    env = clean_env(
        AWS_ACCESS_KEY_ID="demo", AWS_SECRET_ACCESS_KEY="demo", AWS_DEFAULT_REGION="us-east-1"
    )
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    stdout = OutputReader(process.stdout, '"batch outcomes"')
    stderr = OutputReader(process.stderr, "\n")
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and sum(
            line.count('"action":"') for line in stdout.lines
        ) < (PLAIN + PARKED + added):
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0, "".join(stderr.lines)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stdout.join()
    stderr.join()
    assert not any("Traceback" in line for line in stderr.lines + stdout.lines)
    return stderr.lines


def assert_counts(summary: RecoverySummary) -> None:
    assert summary.failed_first == PLAIN
    assert summary.sent == {1: PLAIN}
    assert summary.returned == {MAX_ATTEMPTS: PARKED}
    assert summary.parked == {MAX_ATTEMPTS: PARKED}


def test_with_audit_table_the_counts_go_to_the_table(
    emulator_endpoint: str, emulator_sqs: SQSClient
) -> None:
    dynamodb = boto3.client(
        "dynamodb",
        endpoint_url=emulator_endpoint,
        region_name="us-east-1",
        aws_access_key_id="demo",
        aws_secret_access_key="demo",
    )
    breaker_table(dynamodb, TABLE)
    lines = run_worker(emulator_endpoint, emulator_sqs, "tabled", "--audit-table", TABLE)

    assert [line for line in lines if "follow:" in line] == [
        f"dlq-replay: follow: recovery counts and returns go to the table {TABLE}\n"
    ]
    now = time.time()
    summary = DynamoFollowStore(dynamodb, TABLE).window("tabled-dlq", now - 3600, now)
    assert_counts(summary)


def demo_client(service: str, endpoint: str) -> Any:
    """A client of the emulator's `service`, with the demo's credentials."""
    return boto3.client(  # type: ignore[call-overload]
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="demo",
        aws_secret_access_key="demo",
    )


def test_with_stack_the_counts_go_to_the_stacks_table(
    emulator_endpoint: str, emulator_sqs: SQSClient
) -> None:
    dynamodb = demo_client("dynamodb", emulator_endpoint)
    breaker_table(dynamodb, TABLE)
    template = (
        '{"Resources": {"Nothing": {"Type": "AWS::SQS::Queue"}}, '
        f'"Outputs": {{"AuditTableName": {{"Value": "{TABLE}"}}}}}}'
    )
    demo_client("cloudformation", emulator_endpoint).create_stack(
        StackName="orders", TemplateBody=template
    )
    lines = run_worker(emulator_endpoint, emulator_sqs, "stacked", "--stack", "orders")

    assert any(f"go to the table {TABLE}" in line for line in lines)
    now = time.time()
    assert_counts(DynamoFollowStore(dynamodb, TABLE).window("stacked-dlq", now - 3600, now))


def test_with_stack_the_notice_goes_to_the_stacks_alarm_topic(
    emulator_endpoint: str, emulator_sqs: SQSClient
) -> None:
    """Returns of a move past its threshold (6 of 10 sent): the worker publishes the notice to
    the stack's AlarmTopicArn output, as the Lambda does to its alarm topic."""
    dynamodb = demo_client("dynamodb", emulator_endpoint)
    breaker_table(dynamodb, "notice-table")
    sns = demo_client("sns", emulator_endpoint)
    topic = sns.create_topic(Name="alarms")["TopicArn"]
    inbox = emulator_sqs.create_queue(QueueName="alarm-inbox")["QueueUrl"]
    inbox_arn = emulator_sqs.get_queue_attributes(QueueUrl=inbox, AttributeNames=["QueueArn"])
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=inbox_arn["Attributes"]["QueueArn"])
    outputs = {"AuditTableName": "notice-table", "AlarmTopicArn": topic}
    template = json.dumps(
        {
            "Resources": {"Nothing": {"Type": "AWS::SQS::Queue"}},
            "Outputs": {name: {"Value": value} for name, value in outputs.items()},
        }
    )
    demo_client("cloudformation", emulator_endpoint).create_stack(
        StackName="alarmed", TemplateBody=template
    )
    action = "a" * 32
    follows = DynamoFollowStore(dynamodb, "notice-table")
    follows.started(action, 3600, time.time(), command="redrive")
    follows.sent(action, 10, 0)

    def returned(sqs: SQSClient, dlq_url: str) -> int:
        for index in range(6):
            tag = follow_value(action, f"moved-{index}")
            sqs.send_message(
                QueueUrl=dlq_url,
                MessageBody=f"back-{index}",
                MessageAttributes={FOLLOW_ATTRIBUTE: {"DataType": "String", "StringValue": tag}},
            )
        return 6

    run_worker(emulator_endpoint, emulator_sqs, "alarmed", "--stack", "alarmed", more=returned)

    received = emulator_sqs.receive_message(QueueUrl=inbox, WaitTimeSeconds=1)
    texts = [message["Body"] for message in received.get("Messages", [])]
    assert len(texts) == 1, texts
    assert "the fix did not hold" in texts[0]
    assert "of 10 redriven" in texts[0]
    assert follows.follow(action) is not None
    assert follows.follow(action).returned == 6  # type: ignore[union-attr]


def test_without_a_table_the_counts_go_to_the_file_and_one_line_says_so(
    emulator_endpoint: str, emulator_sqs: SQSClient
) -> None:
    lines = run_worker(emulator_endpoint, emulator_sqs, "local")

    file = Path(os.environ["XDG_STATE_HOME"]) / "dlq-replay" / "follow.jsonl"
    said = [line for line in lines if "follow:" in line]
    assert said == [
        f"dlq-replay: follow: recovery counts and returns go to {file}, which no other operator "
        "sees (pass --stack NAME or --audit-table NAME)\n"
    ]
    now = time.time()
    assert_counts(FileFollowStore(file).window("local-dlq", now - 3600, now))
