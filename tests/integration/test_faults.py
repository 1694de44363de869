"""When SQS says no: per-entry failures, refusals, missing queues.

The records come from a real redrive in moto; where a fault needs an exact SQS answer, the
replayer's own client is stubbed with botocore's Stubber, which also checks every request's
exact shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from aws_lambda_powertools import Metrics
from botocore.stub import Stubber

from integration.harness import (
    COUNT,
    PARK_REASON,
    Outgoing,
    RecordingLog,
    ReplayFactory,
    ReplayQueues,
    RequestLog,
    Sqs,
    failed_ids,
    number,
    record_ids,
    string,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


pytestmark = pytest.mark.emulator


@pytest.fixture
def stub(replay_client: SQSClient) -> Iterator[Stubber]:
    """The replayer's client, stubbed; every queued response must be consumed."""
    with Stubber(replay_client) as stubber:
        yield stubber
        stubber.assert_no_pending_responses()


def count_entry(entry_id: str, body: str, count: str = "1") -> dict[str, Any]:
    return {
        "Id": entry_id,
        "MessageBody": body,
        "MessageAttributes": {COUNT: {"DataType": "Number", "StringValue": count}},
    }


def ok(entry_id: str) -> dict[str, str]:
    return {
        "Id": entry_id,
        "MessageId": f"00000000-0000-4000-8000-00000000000{entry_id}",
        "MD5OfMessageBody": "0" * 32,
    }


def test_entries_failed_by_sqs_are_exactly_the_batch_item_failures(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues, stub: Stubber
) -> None:
    bodies = ["m0", "m1", "m2", "m3"]
    event = sqs.dead_letter_event(queues, [Outgoing(b) for b in bodies])
    ids = record_ids(event)
    stub.add_response(
        "send_message_batch",
        {
            "Successful": [ok("0"), ok("2")],
            "Failed": [
                {"Id": "1", "SenderFault": False, "Code": "InternalError", "Message": "oops"},
                {"Id": "3", "SenderFault": False, "Code": "ServiceUnavailable", "Message": "x"},
            ],
        },
        expected_params={
            "QueueUrl": queues.main.url,
            "Entries": [count_entry(str(i), body) for i, body in enumerate(bodies)],
        },
    )

    response = make_replay(queues)(event)

    assert failed_ids(response) == [ids[1], ids[3]]


def test_entry_refused_by_the_destination_is_parked_as_rejected(
    make_replay: ReplayFactory,
    sqs: Sqs,
    queues: ReplayQueues,
    stub: Stubber,
    replay_log: RecordingLog,
) -> None:
    event = sqs.dead_letter_event(
        queues,
        [
            Outgoing("fine"),
            Outgoing("refused", {"kind": string("x", "String.t")}),
        ],
    )
    ids = record_ids(event)
    refused_attributes = {"kind": {"DataType": "String.t", "StringValue": "x"}}
    stub.add_response(
        "send_message_batch",
        {
            "Successful": [ok("0")],
            "Failed": [
                {
                    "Id": "1",
                    "SenderFault": True,
                    "Code": "InvalidParameterValue",
                    "Message": "refused for good",
                }
            ],
        },
        expected_params={
            "QueueUrl": queues.main.url,
            "Entries": [
                count_entry("0", "fine"),
                {
                    "Id": "1",
                    "MessageBody": "refused",
                    "MessageAttributes": {
                        **refused_attributes,
                        COUNT: {"DataType": "Number", "StringValue": "1"},
                    },
                },
            ],
        },
    )
    # The parked copy keeps the count it came with (none) and says why it was parked.
    stub.add_response(
        "send_message_batch",
        {"Successful": [ok("0")], "Failed": []},
        expected_params={
            "QueueUrl": queues.operator.url,
            "Entries": [
                {
                    "Id": "0",
                    "MessageBody": "refused",
                    "MessageAttributes": {
                        **refused_attributes,
                        PARK_REASON: {"DataType": "String", "StringValue": "rejected"},
                    },
                }
            ],
        },
    )

    response = make_replay(queues)(event)

    assert failed_ids(response) == []
    (parked,) = [line for line in replay_log.for_message(ids[1]) if line.level == "info"]
    assert (parked.message, parked.extra["reason"]) == ("record parked", "rejected")


def test_refused_entry_that_cannot_be_parked_either_is_a_batch_item_failure(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues, stub: Stubber
) -> None:
    event = sqs.dead_letter_event(queues, [Outgoing("refused")])
    (record_id,) = record_ids(event)
    stub.add_response(
        "send_message_batch",
        {
            "Successful": [],
            "Failed": [
                {"Id": "0", "SenderFault": True, "Code": "InvalidMessageContents", "Message": ""}
            ],
        },
        expected_params={"QueueUrl": queues.main.url, "Entries": [count_entry("0", "refused")]},
    )
    stub.add_client_error(
        "send_message_batch",
        service_error_code="AWS.SimpleQueueService.NonExistentQueue",
        http_status_code=400,
        expected_params={
            "QueueUrl": queues.operator.url,
            "Entries": [
                {
                    "Id": "0",
                    "MessageBody": "refused",
                    "MessageAttributes": {
                        PARK_REASON: {"DataType": "String", "StringValue": "rejected"}
                    },
                }
            ],
        },
    )

    assert failed_ids(make_replay(queues)(event)) == [record_id]


@pytest.mark.parametrize("how", ["deleted", "never-existed"])
def test_missing_operator_queue_fails_only_the_parked_records(
    make_replay: ReplayFactory,
    sqs: Sqs,
    queues: ReplayQueues,
    replay_log: RecordingLog,
    how: str,
) -> None:
    event = sqs.dead_letter_event(
        queues,
        [
            Outgoing("replayable"),
            Outgoing("at the limit", {COUNT: number(3)}),
            Outgoing("bad count", {COUNT: number("x1", "String")}),
            Outgoing("replayable too"),
        ],
    )
    ids = record_ids(event)
    env: dict[str, str | None] = {}
    if how == "deleted":
        sqs.client.delete_queue(QueueUrl=queues.operator.url)
    else:
        env["OPERATOR_QUEUE_URL"] = queues.operator.url.replace("operator", "no-such-queue")

    response = make_replay(queues, env)(event)

    assert failed_ids(response) == [ids[1], ids[2]]
    assert sorted(m["Body"] for m in sqs.drain(queues.main)) == ["replayable", "replayable too"]
    errors = [line for line in replay_log.lines if line.level == "error"]
    assert [(line.extra["message_id"], line.extra["reason"]) for line in errors] == [
        (ids[1], "max-attempts"),
        (ids[2], "invalid-count"),
    ]
    assert {line.extra["error_code"] for line in errors} == {
        "AWS.SimpleQueueService.NonExistentQueue"
    }


def test_missing_main_queue_fails_the_whole_batch_without_an_exception(
    make_replay: ReplayFactory,
    sqs: Sqs,
    queues: ReplayQueues,
    replay_client: SQSClient,
) -> None:
    event = sqs.dead_letter_event(queues, [Outgoing(f"m{i}") for i in range(3)])
    sqs.client.delete_queue(QueueUrl=queues.main.url)
    log = RequestLog(replay_client)

    response = make_replay(queues)(event)

    assert failed_ids(response) == record_ids(event)
    # One attempt at the batch, nothing sent anywhere else (in particular not parked).
    assert [p["QueueUrl"] for p in log.of("SendMessageBatch")] == [queues.main.url]
    assert sqs.drain(queues.operator) == []
    assert sqs.total(queues.dlq) == 3  # all still in the DLQ, for the event source's retry


@pytest.mark.parametrize(
    ("status", "code", "copy_written"),
    [
        (500, "InternalError", "unknown"),
        (503, "ServiceUnavailable", "unknown"),
        (400, "RequestThrottled", "no"),
    ],
)
def test_a_failed_request_says_whether_its_copies_may_exist_all_the_same(
    make_replay: ReplayFactory,
    sqs: Sqs,
    queues: ReplayQueues,
    stub: Stubber,
    replay_log: RecordingLog,
    status: int,
    code: str,
    copy_written: str,
) -> None:
    """A 5xx may come after SQS wrote the copies: the records are still reported failed (no
    write was confirmed), but the log says so and a metric counts them; a 4xx wrote nothing."""
    event = sqs.dead_letter_event(queues, [Outgoing("m0"), Outgoing("m1")])
    stub.add_client_error("send_message_batch", service_error_code=code, http_status_code=status)
    metrics = Metrics(namespace="SqsDlqReplay", service="test")

    try:
        response = make_replay(queues, metrics=metrics)(event)
        counted = {name: sum(m["Value"]) for name, m in metrics.metric_set.items()}
    finally:
        metrics.clear_metrics()

    assert failed_ids(response) == record_ids(event)
    errors = [
        line
        for i in record_ids(event)
        for line in replay_log.for_message(i)
        if line.level == "error"
    ]
    assert [line.extra["copy_written"] for line in errors] == [copy_written, copy_written]
    assert counted["SendFailures"] == 2
    assert counted.get("UnconfirmedSendFailures", 0) == (2 if copy_written == "unknown" else 0)
