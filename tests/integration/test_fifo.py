"""FIFO queues: groups, deduplication ids, order, and failures within a group."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from botocore.stub import Stubber

from integration.harness import (
    COUNT,
    NOT_BEFORE,
    FakeClock,
    Outgoing,
    ReplayFactory,
    ReplayQueues,
    RequestLog,
    Sqs,
    attributes_of,
    failed_ids,
    system_attributes_of,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator

# Sent interleaved: a1 b1 a2 b2 a3 b3.
MESSAGES = [
    Outgoing(f"{group}{n}", group_id=f"group-{group}") for n in (1, 2, 3) for group in ("a", "b")
]
# The tests below need the DLQ to hand the records out interleaved, as sent (moto does).
GROUPED = "LocalStack, like SQS, may hand out a FIFO DLQ's messages group by group"
COUNT_1 = {COUNT: {"DataType": "Number", "StringValue": "1"}}


def by_group(bodies_and_groups: list[tuple[str, str]]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for body, group in bodies_and_groups:
        grouped.setdefault(group, []).append(body)
    return grouped


def expected_entry(record: dict[str, Any], entry_id: str, suffix: str) -> dict[str, Any]:
    return {
        "Id": entry_id,
        "MessageBody": record["body"],
        "MessageAttributes": COUNT_1,
        "MessageGroupId": record["attributes"]["MessageGroupId"],
        "MessageDeduplicationId": f"{record['messageId']}-{suffix}",
    }


@pytest.mark.moto_only(reason=GROUPED)
def test_fifo_round_trip_keeps_groups_and_their_order_and_deduplicates_a_repeat(
    make_replay: ReplayFactory, sqs: Sqs, fifo_queues: ReplayQueues, replay_client: SQSClient
) -> None:
    queues = fifo_queues
    log = RequestLog(replay_client)
    event = sqs.dead_letter_event(queues, MESSAGES)
    records = event["Records"]
    replay = make_replay(queues)  # full jitter drawing 0: no delay, straight to main.fifo

    assert replay(event) == {"batchItemFailures": []}

    # One request per position in the groups: a record goes only after its predecessor did.
    sends = log.of("SendMessageBatch")
    assert [p["QueueUrl"] for p in sends] == [queues.main.url] * 3
    assert [[e["MessageBody"] for e in p["Entries"]] for p in sends] == [
        ["a1", "b1"],
        ["a2", "b2"],
        ["a3", "b3"],
    ]
    assert log.sent_entries(queues.main) == [
        expected_entry(records[i], str(i % 2), "replay-1") for i in range(6)
    ]

    # The same batch again (a crash after sending, before the event source deleted it), well
    # within SQS's five minutes: the same deduplication ids, and moto, like SQS, drops the
    # repeats. (moto only deduplicates against messages still in the queue, where SQS also
    # remembers consumed ones; the request's ids are what SQS would judge.)
    assert replay(event) == {"batchItemFailures": []}
    repeated = log.sent_entries(queues.main)[6:]
    assert [e["MessageDeduplicationId"] for e in repeated] == [
        f"{r['messageId']}-replay-1" for r in records
    ]
    replayed = sqs.drain(queues.main)
    assert len(replayed) == 6
    assert by_group([(m["Body"], system_attributes_of(m)["MessageGroupId"]) for m in replayed]) == {
        "group-a": ["a1", "a2", "a3"],
        "group-b": ["b1", "b2", "b3"],
    }
    assert all(attributes_of(m) == COUNT_1 for m in replayed)


@pytest.fixture
def stub(replay_client: SQSClient) -> Iterator[Stubber]:
    with Stubber(replay_client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


@pytest.mark.moto_only(reason=GROUPED)
def test_a_failure_stops_the_rest_of_its_group_and_other_groups_go_on(
    make_replay: ReplayFactory, sqs: Sqs, fifo_queues: ReplayQueues, stub: Stubber
) -> None:
    queues = fifo_queues
    event = sqs.dead_letter_event(queues, MESSAGES)
    records = event["Records"]
    a1, b1, a2, b2, a3, b3 = records

    def ok(entry_id: str) -> dict[str, str]:
        return {"Id": entry_id, "MessageId": f"id-{entry_id}", "MD5OfMessageBody": "0" * 32}

    stub.add_response(
        "send_message_batch",
        {
            "Successful": [ok("1")],
            "Failed": [
                {"Id": "0", "SenderFault": False, "Code": "InternalError", "Message": "try later"}
            ],
        },
        expected_params={
            "QueueUrl": queues.main.url,
            "Entries": [expected_entry(a1, "0", "replay-1"), expected_entry(b1, "1", "replay-1")],
        },
    )
    # a2 and a3 are never sent: the Stubber would refuse any request with them in it.
    for record in (b2, b3):
        stub.add_response(
            "send_message_batch",
            {"Successful": [ok("0")], "Failed": []},
            expected_params={
                "QueueUrl": queues.main.url,
                "Entries": [expected_entry(record, "0", "replay-1")],
            },
        )

    response = make_replay(queues)(event)

    assert failed_ids(response) == [a1["messageId"], a2["messageId"], a3["messageId"]]


def test_fifo_backoff_is_written_back_to_the_fifo_dlq_with_group_and_dedup_id(
    make_replay: ReplayFactory, sqs: Sqs, fifo_queues: ReplayQueues, replay_client: SQSClient
) -> None:
    """FIFO takes no DelaySeconds, so even a one-minute backoff waits in the DLQ."""
    queues = fifo_queues
    log = RequestLog(replay_client)
    event = sqs.dead_letter_event(queues, [Outgoing("x", group_id="tenant-7")])
    (record,) = event["Records"]
    replay = make_replay(
        queues, {"BACKOFF_BASE_SECONDS": "60", "JITTER": "none"}, clock=FakeClock(1_000_000)
    )

    assert replay(event) == {"batchItemFailures": []}

    assert log.sent_entries(queues.main) == []
    assert log.sent_entries(queues.dlq) == [
        {
            "Id": "0",
            "MessageBody": "x",
            "MessageAttributes": {
                **COUNT_1,
                NOT_BEFORE: {"DataType": "Number", "StringValue": "1000060"},
            },
            "MessageGroupId": "tenant-7",
            "MessageDeduplicationId": f"{record['messageId']}-defer-1",
        }
    ]
    # The event source deletes the record it got back as done; that unblocks the group, and
    # the copy is the next message of the group in the DLQ.
    sqs.client.delete_message(QueueUrl=queues.dlq.url, ReceiptHandle=record["receiptHandle"])
    (copy,) = sqs.receive_event(queues.dlq)["Records"]
    assert copy["messageId"] != record["messageId"]
    assert copy["body"] == "x"
    assert copy["attributes"]["MessageGroupId"] == "tenant-7"
    assert copy["messageAttributes"][NOT_BEFORE]["stringValue"] == "1000060"
