"""`--stack` against template.yaml itself, deployed into an in-process moto the way the
end-to-end test deploys it (tools/moto_stack: the SAM transform done offline, moto's gaps
patched in the transformed template only)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
import pytest
from botocore.config import Config

from .support import REGION, park, run_cli

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

moto_stack = pytest.importorskip("tools.moto_stack")

PARAMETERS = {
    "MaxAttempts": "5",
    "BackoffBaseSeconds": "20",
    "BackoffMultiplier": "2.5",
    "BackoffCapSeconds": "3600",
    "Jitter": "decorrelated",
    "ReplayCountAttribute": "shop-replays",
    "MainQueueMaxReceiveCount": "4",
    "DeadLetterQueueMaxReceiveCount": "30",
}


def test_operator_commands_on_the_deployed_template(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient
) -> None:
    s3 = boto3.client("s3", region_name=REGION, config=Config(s3={"addressing_style": "path"}))
    cloudformation = boto3.client("cloudformation", region_name=REGION)
    outputs = moto_stack.deploy_stack(cloudformation, s3, PARAMETERS, stack_name="shop")

    status = run_cli(capsys, "status", "--stack", "shop", "--json")

    assert status.code == 0, status
    report = status.json()
    queues = {q["role"]: q for q in report["queues"]}
    assert {role: q["url"] for role, q in queues.items()} == {
        "main": outputs["MainQueueUrl"],
        "dlq": outputs["DeadLetterQueueUrl"],
        "operator": outputs["OperatorQueueUrl"],
    }
    assert queues["main"]["redrive"]["max_receive_count"] == 4
    assert queues["dlq"]["redrive"]["max_receive_count"] == 30
    assert queues["dlq"]["redrive"]["target_arn"] == outputs["OperatorQueueArn"]
    event_source = report["event_source"]
    assert event_source["function_name"] == outputs["ReplayFunctionName"]
    assert event_source["enabled"]

    plan = run_cli(capsys, "plan", "--stack", "shop", "--json")

    settings = plan.json()["settings"]
    assert (settings["max_attempts"], settings["base_seconds"]) == (5, 20)
    assert (settings["multiplier"], settings["cap_seconds"]) == (2.5, 3600)
    assert settings["jitter"] == "decorrelated"

    # Parked messages only (moto would run the function in Docker for messages on the DLQ).
    park(sqs, outputs["OperatorQueueUrl"], ["a"], count=None)
    sqs.send_message(
        QueueUrl=outputs["OperatorQueueUrl"],
        MessageBody="b",
        MessageAttributes={"shop-replays": {"DataType": "Number", "StringValue": "5"}},
    )
    peek = run_cli(capsys, "peek", "operator", "--stack", "shop", "--wait-seconds", "0", "--json")
    assert sorted(str(m["replay_count"]) for m in peek.json()["messages"]) == ["0", "5"]
    moved = run_cli(
        capsys, "redrive", "--stack", "shop", "--reset-count", "--wait-seconds", "0", "--json"
    )
    assert (moved.code, moved.json()["moved"]) == (0, 2)
