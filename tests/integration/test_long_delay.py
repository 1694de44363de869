"""Delays longer than a destination accepts: write back, hold, release.

docs/design.md, 'Delays longer than 15 minutes and FIFO queues'.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import pytest

from integration.harness import (
    COUNT,
    NOT_BEFORE,
    AppHandle,
    FakeClock,
    Outgoing,
    ReplayFactory,
    ReplayQueues,
    RequestLog,
    Sqs,
    attributes_of,
    failed_ids,
    record_ids,
    string,
    system_attributes_of,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

START = 1_800_000_000.25
HOUR = {"BACKOFF_BASE_SECONDS": "3600", "BACKOFF_CAP_SECONDS": "3600", "JITTER": "none"}


def test_an_hour_of_delay_is_written_back_held_and_released_once_its_time_has_come(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues, replay_client: SQSClient
) -> None:
    clock = FakeClock(START)
    log = RequestLog(replay_client)
    replay = make_replay(queues, HOUR, clock=clock)
    event = sqs.dead_letter_event(queues, [Outgoing("later", {"keep": string("me")})])
    not_before = 1_800_003_600  # floor(START) + 3600

    # 1. Written back into the DLQ, counted, and served the 900 s SQS allows as DelaySeconds.
    assert replay(event) == {"batchItemFailures": []}
    (entry,) = log.sent_entries(queues.dlq)
    assert entry == {
        "Id": "0",
        "MessageBody": "later",
        "MessageAttributes": {
            "keep": {"DataType": "String", "StringValue": "me"},
            COUNT: {"DataType": "Number", "StringValue": "1"},
            NOT_BEFORE: {"DataType": "Number", "StringValue": str(not_before)},
        },
        "DelaySeconds": 900,
    }
    assert sqs.total(queues.main) == 0
    assert sqs.total(queues.operator) == 0

    # 2. Back too early (moto's 900 s delay skipped, the clock 1000 s on): hidden again for
    # the 2600 s still to wait, and reported as not done.
    sqs.end_delays(queues.dlq)
    early = sqs.receive_event(queues.dlq)
    (copy,) = early["Records"]
    assert copy["messageAttributes"][NOT_BEFORE]["stringValue"] == str(not_before)
    clock.advance(1000)

    assert failed_ids(replay(early)) == [copy["messageId"]]
    assert log.of("ChangeMessageVisibilityBatch") == [
        {
            "QueueUrl": queues.dlq.url,
            "Entries": [
                {"Id": "0", "ReceiptHandle": copy["receiptHandle"], "VisibilityTimeout": 2600}
            ],
        }
    ]
    assert sqs.receive_event(queues.dlq)["Records"] == []  # really hidden
    assert sqs.total(queues.main) == 0

    # 3. Its time has come (the visibility timeout ends, the clock passes not-before): released
    # to the main queue at once, without the marker, the count not advanced again.
    sqs.client.change_message_visibility(
        QueueUrl=queues.dlq.url, ReceiptHandle=copy["receiptHandle"], VisibilityTimeout=0
    )
    due = sqs.receive_event(queues.dlq)
    assert record_ids(due) == [copy["messageId"]]
    clock.advance(2601)

    assert replay(due) == {"batchItemFailures": []}
    (released_entry,) = log.sent_entries(queues.main)
    assert "DelaySeconds" not in released_entry
    (released,) = sqs.drain(queues.main)
    assert released["Body"] == "later"
    assert attributes_of(released) == {
        "keep": {"DataType": "String", "StringValue": "me"},
        COUNT: {"DataType": "Number", "StringValue": "1"},
    }
    assert sqs.total(queues.operator) == 0


def test_release_with_less_than_fifteen_minutes_left_uses_delay_seconds(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues, replay_client: SQSClient
) -> None:
    clock = FakeClock(START)
    log = RequestLog(replay_client)
    replay = make_replay(queues, HOUR, clock=clock)
    assert replay(sqs.dead_letter_event(queues, [Outgoing("later")])) == {"batchItemFailures": []}
    sqs.end_delays(queues.dlq)
    due = sqs.receive_event(queues.dlq)
    clock.advance(3000)  # 600 s left of the hour: the main queue can serve that itself

    assert replay(due) == {"batchItemFailures": []}

    (released,) = log.sent_entries(queues.main)
    assert released["DelaySeconds"] == 600
    assert NOT_BEFORE not in released["MessageAttributes"]
    assert released["MessageAttributes"][COUNT] == {"DataType": "Number", "StringValue": "1"}
    assert log.of("ChangeMessageVisibilityBatch") == []


@pytest.mark.slow
def test_fifo_delay_goes_through_the_dlq_in_real_time_and_is_released_exactly_once(
    app: AppHandle, sqs: Sqs, fifo_queues: ReplayQueues, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end with a real clock, through `app.handler`, with an event source loop like
    Lambda's (delete what succeeded, leave failures to their visibility timeout). A FIFO main
    queue takes no per-message delay, so even 2 s go through the write-back path."""
    queues = fifo_queues
    monkeypatch.setenv("MAIN_QUEUE_URL", queues.main.url)
    monkeypatch.setenv("OPERATOR_QUEUE_URL", queues.operator.url)
    monkeypatch.setenv("BACKOFF_BASE_SECONDS", "2")
    monkeypatch.setenv("JITTER", "none")
    # The first poll is the one that found the dead-lettered message.
    event = sqs.dead_letter_event(queues, [Outgoing("soon", group_id="g1")])

    not_before: int | None = None
    holds = 0
    arrivals: list[tuple[float, MessageTypeDef]] = []
    deadline = time.time() + 10
    while time.time() < deadline:
        if event["Records"]:
            for record in event["Records"]:
                marker = record["messageAttributes"].get(NOT_BEFORE)
                if marker is not None:
                    not_before = int(marker["stringValue"])
            failed = set(failed_ids(app.handler(event)))
            holds += len(failed)
            _delete(sqs, queues, [r for r in event["Records"] if r["messageId"] not in failed])
        arrivals.extend((time.time(), m) for m in sqs.drain(queues.main))
        if arrivals and sqs.total(queues.dlq) == 0:
            break
        time.sleep(0.2)
        event = sqs.receive_event(queues.dlq)

    assert not_before is not None
    assert holds >= 1  # it came back early at least once and was hidden again
    ((arrived_at, released),) = arrivals
    assert arrived_at >= not_before
    assert released["Body"] == "soon"
    assert attributes_of(released) == {COUNT: {"DataType": "Number", "StringValue": "1"}}
    assert system_attributes_of(released)["MessageGroupId"] == "g1"
    time.sleep(0.3)
    assert sqs.drain(queues.main) == []  # exactly once
    assert sqs.total(queues.dlq) == 0
    assert sqs.total(queues.operator) == 0


def _delete(sqs: Sqs, queues: ReplayQueues, records: list[dict[str, Any]]) -> None:
    if records:
        sqs.client.delete_message_batch(
            QueueUrl=queues.dlq.url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": r["receiptHandle"]} for i, r in enumerate(records)
            ],
        )
