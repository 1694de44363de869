"""main -> DLQ (a real redrive) -> the replay -> main again, on every emulator."""

from __future__ import annotations

import gzip
import time
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.local.eventsource import lambda_event

from integration.harness import (
    COUNT,
    PARK_REASON,
    REGION,
    AppHandle,
    Outgoing,
    ReplayFactory,
    ReplayQueues,
    RequestLog,
    Sqs,
    attributes_of,
    binary,
    failed_ids,
    number,
    string,
    system_attributes_of,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator

# Not UTF-8 in any reading: a lone continuation byte, 0xff/0xfe, a NUL.
RAW_BYTES = b"\xff\xfe\x00\x80\xc3(\x9f raw"
GZIPPED = gzip.compress(b'{"order": 42}', mtime=0)
BODY = '{"order": 42, "note": "ünïcödé ✓"}'
ATTRIBUTES = {
    "text": string("héllo wörld"),
    "amount": number("12345.678"),
    "blob": binary(RAW_BYTES),
    "items": number("42", "Number.int"),
    "payload": binary(GZIPPED, "Binary.gzip"),
    "tag": string("custom type", "String.x"),
}


def expected_attributes(count: str) -> dict[str, dict[str, Any]]:
    """What a received copy must carry: every original attribute as boto3 returns it, plus
    the count as a Number."""
    received: dict[str, dict[str, Any]] = {name: dict(value) for name, value in ATTRIBUTES.items()}
    received[COUNT] = {"DataType": "Number", "StringValue": count}
    return received


@pytest.mark.moto_only(
    reason="sleeps out a 2 s DelaySeconds; LocalStack releases delayed messages on its own tick"
)
def test_round_trip_through_app_handler_keeps_every_byte_and_honours_the_delay(
    app: AppHandle, sqs: Sqs, queues: ReplayQueues, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MAIN_QUEUE_URL", queues.main.url)
    monkeypatch.setenv("OPERATOR_QUEUE_URL", queues.operator.url)
    monkeypatch.setenv("BACKOFF_BASE_SECONDS", "2")
    monkeypatch.setenv("JITTER", "none")
    event = sqs.dead_letter_event(queues, [Outgoing(BODY, ATTRIBUTES)])
    record = event["Records"][0]
    # The record is Lambda's shape: camelCase, base64 binaries, the type suffixes kept.
    assert record["messageAttributes"]["payload"]["dataType"] == "Binary.gzip"
    assert record["messageAttributes"]["blob"].get("stringValue") is None
    assert record["eventSourceARN"] == queues.dlq.arn

    response = app.handler(event)
    returned_at = time.monotonic()

    assert response == {"batchItemFailures": []}
    # Delayed by exactly the ceiling (2 s, no jitter): nothing visible yet, but one message held.
    assert sqs.drain(queues.main) == []
    assert sqs.total(queues.main) == 1
    time.sleep(max(0.0, 2.5 - (time.monotonic() - returned_at)))
    (replayed,) = sqs.drain(queues.main)

    assert replayed["Body"] == BODY
    assert attributes_of(replayed) == expected_attributes("1")
    assert attributes_of(replayed)["blob"]["BinaryValue"] == RAW_BYTES
    assert gzip.decompress(attributes_of(replayed)["payload"]["BinaryValue"]) == b'{"order": 42}'
    assert sqs.drain(queues.operator) == []


def test_replayed_copy_of_a_replayed_copy_counts_up(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues
) -> None:
    """A copy that fails again goes through the redrive again and arrives with count 1: the
    next replay writes 2, and the attributes still survive byte for byte."""
    replay = make_replay(queues)
    assert replay(sqs.dead_letter_event(queues, [Outgoing(BODY, ATTRIBUTES)])) == {
        "batchItemFailures": []
    }
    (first,) = sqs.drain(queues.main)
    # Received attribute values are the output TypedDict; SQS takes them back as they are.
    again = Outgoing(first["Body"], first["MessageAttributes"])  # type: ignore[arg-type]

    assert replay(sqs.dead_letter_event(queues, [again])) == {"batchItemFailures": []}

    (second,) = sqs.drain(queues.main)
    assert second["Body"] == BODY
    assert attributes_of(second) == expected_attributes("2")


def test_trace_header_is_carried_as_a_system_attribute(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues, replay_client: SQSClient
) -> None:
    # moto drops AWSTraceHeader on SendMessageBatch, so the request itself is the evidence.
    trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    parked_trace = "Root=1-5759e988-00000000000000000000000a;Sampled=0"
    log = RequestLog(replay_client)
    event = sqs.dead_letter_event(
        queues,
        [
            Outgoing("traced", trace_header=trace),
            Outgoing("traced and parked", {COUNT: number(3)}, trace_header=parked_trace),
        ],
    )
    assert [r["attributes"]["AWSTraceHeader"] for r in event["Records"]] == [trace, parked_trace]

    assert make_replay(queues)(event) == {"batchItemFailures": []}

    (entry,) = log.sent_entries(queues.main)
    assert entry["MessageBody"] == "traced"
    assert entry["MessageSystemAttributes"] == {
        "AWSTraceHeader": {"DataType": "String", "StringValue": trace}
    }
    (parked,) = log.sent_entries(queues.operator)
    assert parked["MessageBody"] == "traced and parked"
    assert parked["MessageSystemAttributes"] == {
        "AWSTraceHeader": {"DataType": "String", "StringValue": parked_trace}
    }


@pytest.mark.localstack_only(reason="moto drops AWSTraceHeader on SendMessageBatch")
def test_trace_header_is_received_with_the_replayed_copy(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues
) -> None:
    """What a consumer of the main queue sees: the batch send kept the X-Ray trace header."""
    trace = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
    event = sqs.dead_letter_event(queues, [Outgoing("traced", trace_header=trace)])

    assert make_replay(queues)(event) == {"batchItemFailures": []}

    (copy,) = sqs.drain(queues.main)
    assert copy["Body"] == "traced"
    assert system_attributes_of(copy)["AWSTraceHeader"] == trace
    assert attributes_of(copy) == {COUNT: {"DataType": "Number", "StringValue": "1"}}


def test_batches_of_more_than_ten_records_go_out_in_requests_of_ten(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues, replay_client: SQSClient
) -> None:
    log = RequestLog(replay_client)
    bodies = [f"message {i:02d}" for i in range(13)]
    # Lambda delivers at most 10 per batch from a standard queue by default, but a batching
    # window can deliver more; the event is two polls' worth.
    dead = sqs.dead_letter(queues.main, queues.dlq, [Outgoing(b) for b in bodies])
    event = lambda_event(dead, queues.dlq.arn, REGION)

    assert make_replay(queues)(event) == {"batchItemFailures": []}

    sends = log.of("SendMessageBatch")
    assert [len(params["Entries"]) for params in sends] == [10, 3]
    assert all(params["QueueUrl"] == queues.main.url for params in sends)
    assert "SendMessage" not in log.operations()
    assert [e["MessageBody"] for e in log.sent_entries(queues.main)] == bodies
    assert sorted(m["Body"] for m in sqs.drain(queues.main)) == bodies


def test_fair_queue_group_id_survives_replay_and_parking(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues
) -> None:
    event = sqs.dead_letter_event(
        queues,
        [
            Outgoing("tenant a", group_id="tenant-a"),
            Outgoing("tenant b at the limit", {COUNT: number(3)}, group_id="tenant-b"),
        ],
    )
    assert [r["attributes"]["MessageGroupId"] for r in event["Records"]] == [
        "tenant-a",
        "tenant-b",
    ]

    assert make_replay(queues)(event) == {"batchItemFailures": []}

    (replayed,) = sqs.drain(queues.main)
    assert replayed["Body"] == "tenant a"
    assert system_attributes_of(replayed)["MessageGroupId"] == "tenant-a"
    assert attributes_of(replayed)[COUNT] == {"DataType": "Number", "StringValue": "1"}
    (parked,) = sqs.drain(queues.operator)
    assert parked["Body"] == "tenant b at the limit"
    assert system_attributes_of(parked)["MessageGroupId"] == "tenant-b"
    assert attributes_of(parked)[PARK_REASON]["StringValue"] == "max-attempts"


def test_one_request_per_batch_and_the_dlq_record_is_left_to_the_event_source(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues, replay_client: SQSClient
) -> None:
    log = RequestLog(replay_client)
    event = sqs.dead_letter_event(queues, [Outgoing("plain"), Outgoing("also plain")])

    response = make_replay(queues)(event)

    assert failed_ids(response) == []
    assert sorted(m["Body"] for m in sqs.drain(queues.main)) == ["also plain", "plain"]
    # No SendMessage, no DeleteMessage: deleting DLQ records is the event source's job.
    assert log.operations() == ["SendMessageBatch"]
    assert sqs.total(queues.dlq) == 2
