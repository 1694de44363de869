"""Helpers of the operator CLI tests: wired queues, parked messages, running `dlq-replay`."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay import audit
from dlq_replay.cli import main as cli
from dlq_replay.sqs.depth import queue_depth

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef

REGION = "us-east-1"
ERROR_LINE = re.compile(r"^dlq-replay( [a-z]+)?: error: ")
ACCOUNT = "123456789012"
COUNT = "sqs-dlq-replay-nb"
PARK_REASON = "dlq-replay-park-reason"


@dataclass(frozen=True, slots=True)
class Queues:
    main: str
    dlq: str
    operator: str

    def options(self) -> list[str]:
        return [
            "--main-queue-url",
            self.main,
            "--dlq-url",
            self.dlq,
            "--operator-queue-url",
            self.operator,
        ]


def queue_arn(sqs: SQSClient, url: str) -> str:
    return sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]


def make_queues(
    sqs: SQSClient,
    prefix: str = "orders",
    *,
    fifo: bool = False,
    main_max_receive_count: int = 3,
    dlq_max_receive_count: int = 10,
) -> Queues:
    """main -> DLQ -> operator queue, wired with real RedrivePolicies as the template does."""
    suffix = ".fifo" if fifo else ""
    extra: dict[Any, str] = {"FifoQueue": "true"} if fifo else {}

    def create(name: str, attributes: Mapping[Any, str]) -> str:
        return sqs.create_queue(QueueName=f"{name}{suffix}", Attributes={**extra, **attributes})[
            "QueueUrl"
        ]

    def redrive(target: str, count: int) -> str:
        return json.dumps({"deadLetterTargetArn": queue_arn(sqs, target), "maxReceiveCount": count})

    operator = create(f"{prefix}-operator", {})
    dlq = create(f"{prefix}-dlq", {"RedrivePolicy": redrive(operator, dlq_max_receive_count)})
    main = create(f"{prefix}-main", {"RedrivePolicy": redrive(dlq, main_max_receive_count)})
    return Queues(main, dlq, operator)


def string(value: str, data_type: str = "String") -> MessageAttributeValueTypeDef:
    return {"DataType": data_type, "StringValue": value}


def binary(value: bytes, data_type: str = "Binary") -> MessageAttributeValueTypeDef:
    return {"DataType": data_type, "BinaryValue": value}


def park(
    sqs: SQSClient,
    url: str,
    bodies: Sequence[str],
    *,
    reason: str | None = "max-attempts",
    count: str | None = "3",
    extra: Mapping[str, MessageAttributeValueTypeDef] | None = None,
    group: str | None = None,
) -> list[str]:
    """Send messages as the replay parks them; returns their message ids."""
    ids: list[str] = []
    for body in bodies:
        attributes: dict[str, MessageAttributeValueTypeDef] = dict(extra or {})
        if reason is not None:
            attributes[PARK_REASON] = string(reason)
        if count is not None:
            attributes[COUNT] = string(count, "Number")
        params: dict[str, Any] = {"QueueUrl": url, "MessageBody": body}
        if attributes:
            params["MessageAttributes"] = attributes
        if url.endswith(".fifo"):
            params["MessageGroupId"] = group or "g"
            params["MessageDeduplicationId"] = uuid.uuid4().hex
        elif group is not None:
            params["MessageGroupId"] = group
        ids.append(sqs.send_message(**params)["MessageId"])
    return ids


def depth(sqs: SQSClient, url: str) -> tuple[int, int]:
    """(visible, in flight) of a queue."""
    found = queue_depth(sqs, url)
    return found.visible, found.in_flight


@dataclass(frozen=True, slots=True)
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> Result:
    """`dlq-replay ARGV` in process; a usage error from argparse counts as exit code 2."""
    capsys.readouterr()
    try:
        code = cli.main(list(argv))
    except SystemExit as stop:
        code = int(stop.code or 0)
    captured = capsys.readouterr()
    return Result(code, captured.out, captured.err)


def assert_one_line_error(result: Result, code: int, *fragments: str) -> None:
    assert result.code == code, result
    assert "Traceback" not in result.err
    # `dlq-replay: error:` from the command, `dlq-replay COMMAND: error:` from the parser.
    lines = [line for line in result.err.splitlines() if ERROR_LINE.match(line)]
    assert len(lines) == 1, result.err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def finished_action(
    dynamodb: Any,
    table: str,
    command: str,
    *,
    ago: float,
    origin: audit.Origin = audit.Origin.CLI,
) -> str:
    """A finished action of `command` in the trail (begin `ago` seconds back, and end), as a
    command writes them; its id."""
    store = audit.DynamoAuditStore(dynamodb, table)
    action_id = uuid.uuid4().hex
    started = audit.utc_text(datetime.fromtimestamp(time.time() - ago, UTC))
    common: dict[str, Any] = {
        "action_id": action_id,
        "started_at": started,
        "command": command,
        "origin": origin,
        "identity": audit.Identity.unknown("test"),
    }
    store.write(audit.AuditRecord(phase=audit.AuditPhase.BEGIN, at=started, **common))
    store.write(
        audit.AuditRecord(
            phase=audit.AuditPhase.END,
            at=audit.utc_text(datetime.now(UTC)),
            outcome=audit.AuditOutcome.OK,
            exit_code=0,
            **common,
        )
    )
    return action_id
