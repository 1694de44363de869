"""`dlq-replay redrive` through SQS's own message move task, for real: LocalStack implements
StartMessageMoveTask and ListMessageMoveTasks (moto does not; `test_native_move.py` checks the
exact requests against a Stubber). LocalStack keeps a moved message's MessageId and receive
count where SQS makes new messages, so neither is asserted."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from integration.harness import Outgoing, Queue, Sqs, attributes_of

from .support import COUNT, PARK_REASON, Queues, park, queue_arn, run_cli

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = [
    pytest.mark.emulator,
    pytest.mark.localstack_only(reason="moto has no StartMessageMoveTask"),
]

BODIES = ["one", "two", "three"]
WAIT = ["--wait", "--poll-seconds", "0.1", "--json"]


def queue(sqs: SQSClient, url: str) -> Queue:
    return Queue(url, queue_arn(sqs, url))


def test_redrive_from_the_dlq_moves_messages_back_to_their_source_and_waits(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    """A real redrive main -> DLQ, then `--from dlq --to source --wait`: SQS's task sends each
    message back to the queue it recorded as its source."""
    emulated = Sqs(sqs)
    main, dlq = queue(sqs, queues.main), queue(sqs, queues.dlq)
    dead = emulated.dead_letter(main, dlq, [Outgoing(b) for b in BODIES], max_receive_count=3)
    for message in dead:  # received as Lambda would; visible again for the move task
        sqs.change_message_visibility(
            QueueUrl=dlq.url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
        )

    result = run_cli(capsys, "redrive", *queues.options(), "--from", "dlq", "--to", "source", *WAIT)

    assert result.code == 0, result
    report = result.json()
    assert (report["mode"], report["status"], report["moved"]) == ("native", "COMPLETED", 3)
    assert sorted(m["Body"] for m in emulated.drain(main)) == sorted(BODIES)
    assert emulated.total(dlq) == 0


def test_redrive_of_parked_messages_to_the_main_queue_keeps_every_attribute(
    capsys: pytest.CaptureFixture[str], sqs: SQSClient, queues: Queues
) -> None:
    """The default move, operator queue -> main queue: a native move copies attributes as they
    are, the park reason included (the help says so)."""
    park(sqs, queues.operator, BODIES)
    emulated = Sqs(sqs)

    result = run_cli(capsys, "redrive", *queues.options(), *WAIT)

    assert result.code == 0, result
    report = result.json()
    assert (report["mode"], report["status"], report["moved"]) == ("native", "COMPLETED", 3)
    moved = emulated.drain(queue(sqs, queues.main))
    assert sorted(m["Body"] for m in moved) == sorted(BODIES)
    assert all(
        attributes_of(m)
        == {
            PARK_REASON: {"DataType": "String", "StringValue": "max-attempts"},
            COUNT: {"DataType": "Number", "StringValue": "3"},
        }
        for m in moved
    )
    assert emulated.total(queue(sqs, queues.operator)) == 0
