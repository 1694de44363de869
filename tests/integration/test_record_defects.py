"""A record's own defect is that record's outcome: published sample events, queue names at
SQS's 80-character limit, and attributes whose value keys disagree with their data type."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.aws_lambda.replay import MalformedEventError

from integration.harness import (
    COUNT,
    DLQ_MAX_RECEIVE_COUNT,
    NOT_BEFORE,
    Outgoing,
    RecordingLog,
    ReplayFactory,
    ReplayQueues,
    RequestLog,
    Sqs,
    attributes_of,
    failed_ids,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

EVENTS = Path(__file__).resolve().parents[2] / "events"
HOUR = {"BACKOFF_BASE_SECONDS": "3600", "BACKOFF_CAP_SECONDS": "3600", "JITTER": "none"}


def published(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((EVENTS / "published" / name).read_text(encoding="utf-8"))
    return event


def test_powertools_getting_started_event_is_replayed_despite_its_broken_arn(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues
) -> None:
    """Its eventSourceARN has a space in it: no DLQ URL can be made, and none is needed to
    replay a record to the main queue."""
    event = published("powertools-getting-started-sqs-event.json")

    assert make_replay(queues)(event) == {"batchItemFailures": []}

    replayed = sqs.drain(queues.main)
    assert sorted(m["Body"] for m in replayed) == sorted(r["body"] for r in event["Records"])
    for message in replayed:
        assert attributes_of(message) == {COUNT: {"DataType": "Number", "StringValue": "1"}}


def test_a_record_that_must_wait_in_an_unnamed_dlq_fails_alone(
    make_replay: ReplayFactory,
    sqs: Sqs,
    queues: ReplayQueues,
    replay_log: RecordingLog,
    replay_client: SQSClient,
) -> None:
    """An hour's delay means waiting in the DLQ, which the broken ARN does not name: that
    record is reported not done, with a log line saying why; the healthy one goes on."""
    broken = published("powertools-getting-started-sqs-event.json")["Records"][0]
    healthy = sqs.dead_letter_event(queues, [Outgoing("waits an hour")])["Records"]
    log = RequestLog(replay_client)

    response = make_replay(queues, HOUR)({"Records": [broken, *healthy]})

    assert failed_ids(response) == [broken["messageId"]]
    errors = [line for line in replay_log.for_message(broken["messageId"]) if line.level == "error"]
    assert [line.message for line in errors] == ["record not done"]
    assert "is not an SQS queue ARN" in errors[0].extra["problem"]
    (written_back,) = log.sent_entries(queues.dlq)
    assert written_back["MessageBody"] == "waits an hour"
    assert NOT_BEFORE in written_back["MessageAttributes"]
    assert sqs.total(queues.main) == 0
    assert sqs.total(queues.operator) == 0


def long_name_queues(sqs: Sqs) -> ReplayQueues:
    """main -> DLQ -> operator, every name 80 characters, SQS's limit."""
    operator = sqs.create_queue("o" * 80)
    dlq = sqs.create_source_queue("d" * 80, operator, max_receive_count=DLQ_MAX_RECEIVE_COUNT)
    main = sqs.create_source_queue("m" * 80, dlq)
    return ReplayQueues(main, dlq, operator, 1)


def test_queues_with_80_character_names_are_replayed_and_written_back(
    make_replay: ReplayFactory, sqs: Sqs, replay_client: SQSClient
) -> None:
    queues = long_name_queues(sqs)
    log = RequestLog(replay_client)

    deferred = make_replay(queues, HOUR)(sqs.dead_letter_event(queues, [Outgoing("later")]))
    assert deferred == {"batchItemFailures": []}
    (entry,) = log.sent_entries(queues.dlq)  # the DLQ's URL, made from its 80-character ARN
    assert entry["MessageBody"] == "later"

    # A shared DLQ routes by the 80-character source ARN (as Lambda names it on the record).
    event = sqs.dead_letter_event(queues, [Outgoing("now")])
    event["Records"][0]["attributes"]["DeadLetterQueueSourceArn"] = queues.main.arn
    env = {"MAIN_QUEUE_URL": None, "ALLOWED_SOURCE_QUEUE_ARNS": queues.main.arn}
    assert make_replay(queues, env)(event) == {"batchItemFailures": []}
    assert [m["Body"] for m in sqs.drain(queues.main)] == ["now"]


def test_powertools_sample_number_attribute_is_replayed_as_a_number(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues
) -> None:
    event = published("powertools-sqs-event.json")

    assert make_replay(queues)(event) == {"batchItemFailures": []}

    first = next(m for m in sqs.drain(queues.main) if m["Body"] == "Test message.")
    assert attributes_of(first) == {
        "testAttr": {"DataType": "Number", "StringValue": "100"},
        COUNT: {"DataType": "Number", "StringValue": "1"},
    }


@pytest.mark.parametrize(
    ("event", "why"),
    [
        ({}, "it has no Records list"),
        ({"Records": None}, "it has no Records list"),
        ({"Records": "x"}, "it has no Records list"),
        ({"Records": ["x"]}, "record 0 is not an object"),
        ({"Records": [{"body": "no id"}]}, "record 0 has no messageId"),
        ({"Records": [{"messageId": "a", "body": "a"}, {"messageId": ""}]}, "record 1 has no"),
    ],
)
def test_an_event_that_is_not_an_sqs_event_fails_with_one_line(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues, event: Any, why: str
) -> None:
    """Without a message id there is no record to answer for: the invocation fails whole
    (Lambda keeps the messages), naming what is wrong; nothing is sent."""
    with pytest.raises(MalformedEventError, match=f"^not an SQS event: {why}") as raised:
        make_replay(queues)(event)

    assert "\n" not in str(raised.value)
    assert sqs.total(queues.main) == 0
    assert sqs.total(queues.operator) == 0


def test_an_empty_batch_is_answered_with_no_failures(
    make_replay: ReplayFactory, queues: ReplayQueues
) -> None:
    assert make_replay(queues)({"Records": []}) == {"batchItemFailures": []}


def test_attribute_and_system_fields_of_the_wrong_shape_are_the_records_own_defect(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues, replay_log: RecordingLog
) -> None:
    """An attribute that is not an object is dropped (logged with why), attributes or system
    attributes that are not objects read as none, and every record is still replayed."""
    event = sqs.dead_letter_event(queues, [Outgoing("a"), Outgoing("b"), Outgoing("c")])
    first, second, third = event["Records"]
    first["messageAttributes"] = {"bad": "x", "good": {"dataType": "String", "stringValue": "g"}}
    second["messageAttributes"] = ["not", "an", "object"]
    third["attributes"] = "not an object"

    assert make_replay(queues)(event) == {"batchItemFailures": []}

    replayed = {m["Body"]: attributes_of(m) for m in sqs.drain(queues.main)}
    assert replayed["a"] == {
        "good": {"DataType": "String", "StringValue": "g"},
        COUNT: {"DataType": "Number", "StringValue": "1"},
    }
    assert replayed["b"] == {COUNT: {"DataType": "Number", "StringValue": "1"}}
    assert replayed["c"] == {COUNT: {"DataType": "Number", "StringValue": "1"}}
    (warning,) = [
        line
        for line in replay_log.for_message(first["messageId"])
        if line.message == "attributes the copy cannot carry were dropped"
    ]
    assert warning.extra["dropped_attributes"] == {"bad": "not an attribute object"}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("eventSourceARN", ""),
        ("eventSourceARN", None),
        ("attributes", {"ApproximateReceiveCount": ""}),
        ("attributes", {"ApproximateReceiveCount": "many"}),
    ],
)
def test_fields_the_external_fuzz_broke_are_a_records_own_defect(
    make_replay: ReplayFactory, sqs: Sqs, queues: ReplayQueues, field: str, value: Any
) -> None:
    """Regressions of the issue's fuzz: an empty or missing eventSourceARN and an empty
    ApproximateReceiveCount; the record is still replayed to the main queue."""
    event = sqs.dead_letter_event(queues, [Outgoing("defect")])
    if value is None:
        del event["Records"][0][field]
    else:
        event["Records"][0][field] = value

    assert make_replay(queues)(event) == {"batchItemFailures": []}

    assert [m["Body"] for m in sqs.drain(queues.main)] == ["defect"]
