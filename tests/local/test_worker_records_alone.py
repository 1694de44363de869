"""The worker (`dlq-replay worker`, its own process, on the emulator) in its default mode, sqs:
every record is replayed as an SQS record, whatever its body or attributes look like, and what
one record raises never holds back the others of its poll (issue 44: today a body nested past
the recursion limit fails the whole poll, again and again, and an application's own
`RequestID` + `ErrorCode` attributes park its record `unexpected-kind`)."""

from __future__ import annotations

import subprocess
from typing import TYPE_CHECKING

import pytest
from emulation import eventually

from local.support import clean_env, dlq_replay_command

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef, MessageTypeDef

DEEP = 20_000
DESTINATION_HEAD = (
    '{"requestContext":{"requestId":"8c1b1d57-0000-4000-8000-000000000001",'
    '"functionArn":"arn:aws:lambda:us-east-1:123456789012:function:orders"},"requestPayload":'
)
LOOKALIKE: dict[str, MessageAttributeValueTypeDef] = {
    "RequestID": {"DataType": "String", "StringValue": "the application's own"},
    "ErrorCode": {"DataType": "String", "StringValue": "E42"},
}
RECORDS: list[tuple[str, dict[str, MessageAttributeValueTypeDef]]] = [
    ("plain 1", {}),
    (DESTINATION_HEAD + "[" * DEEP + "]" * DEEP + "}", {}),
    ("plain 2", {}),
    ('{"order": 3}', LOOKALIKE),
    (DESTINATION_HEAD + '"\\ud800"}', {}),
    ("plain 4", {}),
]


def _drain(sqs: SQSClient, url: str, into: list[MessageTypeDef]) -> list[MessageTypeDef]:
    got = sqs.receive_message(
        QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    ).get("Messages", [])
    for message in got:
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    into.extend(got)
    return into


@pytest.mark.emulator
def test_every_record_of_a_poll_is_replayed_as_an_sqs_record(
    emulator_endpoint: str, emulator_sqs: SQSClient
) -> None:
    sqs = emulator_sqs
    dlq, main, operator = (
        sqs.create_queue(QueueName=f"alone-{name}")["QueueUrl"]
        for name in ("dlq", "main", "operator")
    )
    for body, attributes in RECORDS:
        if attributes:
            sqs.send_message(QueueUrl=dlq, MessageBody=body, MessageAttributes=attributes)
        else:
            sqs.send_message(QueueUrl=dlq, MessageBody=body)
    command = [
        *dlq_replay_command(),
        "worker",
        *("--dlq-url", dlq, "--main-queue-url", main, "--operator-queue-url", operator),
        *("--endpoint-url", emulator_endpoint, "--region", "us-east-1"),
        *("--wait-seconds", "1", "--no-breaker", "--log-level", "ERROR"),
        # A ceiling of 1 s with no jitter: each copy is visible a second later.
        *("--backoff-base-seconds", "1", "--backoff-cap-seconds", "1", "--jitter", "none"),
    ]
    env = clean_env(
        AWS_ACCESS_KEY_ID="t", AWS_SECRET_ACCESS_KEY="t", AWS_DEFAULT_REGION="us-east-1"
    )
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    replayed: list[MessageTypeDef] = []
    parked: list[MessageTypeDef] = []
    try:
        eventually(
            lambda: (
                len(_drain(sqs, main, replayed)) + len(_drain(sqs, operator, parked))
                >= len(RECORDS)
            ),
            "every record replayed or parked",
            after=1,
            within=8,
        )
    finally:
        process.terminate()
        process.wait(timeout=20)
    assert sorted(m["Body"] for m in replayed) == sorted(body for body, _ in RECORDS)
    assert parked == []
    for message in replayed:
        assert "dlq-replay-kind" not in message.get("MessageAttributes", {})
