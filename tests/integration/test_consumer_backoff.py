"""Backoff before the DLQ (dlq_replay.consumer): a consumer's failed records are hidden for a
backoff delay drawn from the receive count, batched; `ParkMessage` parks at once; a failed
park leaves the record failed. Against the emulator, with the requests recorded."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from aws_lambda_powertools.utilities.batch import process_partial_response
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from dlq_replay.consumer import (
    PARK_DETAIL_MAX_CHARS,
    BackoffBatchProcessor,
    BackoffFifoProcessor,
    BackoffPolicy,
    ConsumerSettings,
    FailureOptions,
    Jitter,
    ParkMessage,
    park_now,
    park_on,
    settle_failure,
)
from emulation import eventually

from integration.harness import (
    PARK_REASON,
    CharacterCheck,
    Outgoing,
    RecordingLog,
    ReplayQueues,
    RequestLog,
    Sqs,
    attributes_of,
    failed_ids,
    record_ids,
    string,
)

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
    from mypy_boto3_sqs import SQSClient

pytestmark = pytest.mark.emulator

PARK_ERROR = "dlq-replay-error"
# Without jitter the delay is the ceiling: 2 s on the first receive, 4 s on the second.
POLICY = BackoffPolicy(base_seconds=2, multiplier=2, cap_seconds=8, jitter=Jitter.NONE)


@pytest.fixture
def main_queues(sqs: Sqs) -> ReplayQueues:
    """A main queue whose consumer gets five receives before SQS moves a message to the DLQ."""
    return sqs.create_replay_queues("shop", max_receive_count=5)


def settings(queues: ReplayQueues, **changes: Any) -> ConsumerSettings:
    return ConsumerSettings(
        **{"backoff": POLICY, "operator_queue_url": queues.operator.url, **changes}
    )


def handler_failing(*bodies: str) -> Any:
    def record_handler(record: SQSRecord) -> str:
        if record.body in bodies:
            raise RuntimeError(f"cannot handle {record.body}")
        if record.body.startswith("invalid"):
            raise ParkMessage("invalid-order", f"{record.body}: field 'sku' is missing " * 20)
        return record.body

    return record_handler


def visibility_timeouts(requests: RequestLog) -> list[int]:
    return [
        entry["VisibilityTimeout"]
        for params in requests.of("ChangeMessageVisibilityBatch")
        for entry in params["Entries"]
    ]


def visible_again(sqs: Sqs, queues: ReplayQueues) -> dict[str, Any]:
    """The next event with records, once the 2 s delay is over."""
    return eventually(
        lambda: (event := sqs.receive_event(queues.main))["Records"] and event,
        "the backed-off record came back",
        after=2,
    )


def test_a_failed_record_is_hidden_for_its_delay_and_the_receive_count_drives_it(
    sqs: Sqs, main_queues: ReplayQueues, replay_client: SQSClient
) -> None:
    queues = main_queues
    for body in ("ok", "flaky"):
        sqs.send(queues.main, Outgoing(body))
    requests = RequestLog(replay_client)
    processor = BackoffBatchProcessor(replay_client, settings(queues))
    event = sqs.receive_event(queues.main)

    response = process_partial_response(
        event=event, record_handler=handler_failing("flaky"), processor=processor
    )

    flaky = [r["messageId"] for r in event["Records"] if r["body"] == "flaky"]
    assert failed_ids(response) == flaky
    assert visibility_timeouts(requests) == [2]  # attempt 1: the ceiling, 2 s
    # Hidden for its 2 s (the ok record stays in flight: only Lambda would delete it).
    assert sqs.receive_event(queues.main)["Records"] == []
    again = visible_again(sqs, queues)
    assert record_ids(again) == flaky
    assert again["Records"][0]["attributes"]["ApproximateReceiveCount"] == "2"

    with pytest.raises(BatchProcessingError):  # its whole batch failed: Powertools raises
        process_partial_response(
            event=again, record_handler=handler_failing("flaky"), processor=processor
        )

    assert visibility_timeouts(requests) == [2, 4]  # attempt 2: 4 s


def test_failures_of_a_batch_back_off_in_one_request(
    sqs: Sqs, main_queues: ReplayQueues, replay_client: SQSClient
) -> None:
    queues = main_queues
    for n in range(10):
        sqs.send(queues.main, Outgoing(f"fails-{n}"))
    requests = RequestLog(replay_client)
    event = sqs.receive_event(queues.main)
    assert len(event["Records"]) == 10
    processor = BackoffBatchProcessor(
        replay_client, settings(queues), raise_on_entire_batch_failure=False
    )

    response = process_partial_response(
        event=event,
        record_handler=handler_failing(*(f"fails-{n}" for n in range(10))),
        processor=processor,
    )

    assert len(failed_ids(response)) == 10
    assert requests.operations() == ["ChangeMessageVisibilityBatch"]
    assert visibility_timeouts(requests) == [2] * 10


def test_park_now_sends_the_message_with_its_reason_and_no_body_in_the_detail(
    sqs: Sqs, main_queues: ReplayQueues, replay_client: SQSClient
) -> None:
    queues = main_queues
    sqs.send(queues.main, Outgoing("invalid-1", {"tenant": string("acme")}))
    sqs.send(queues.main, Outgoing("ok"))
    log = RecordingLog()
    processor = BackoffBatchProcessor(replay_client, settings(queues), logger=log)
    event = sqs.receive_event(queues.main)

    response = process_partial_response(
        event=event, record_handler=handler_failing(), processor=processor
    )

    assert failed_ids(response) == []  # parked is done: Lambda deletes it from the main queue
    (parked,) = sqs.drain(queues.operator)
    assert parked["Body"] == "invalid-1"
    detail = " ".join(("invalid-1: field 'sku' is missing " * 20).split())[:PARK_DETAIL_MAX_CHARS]
    assert attributes_of(parked) == {
        "tenant": string("acme"),
        PARK_REASON: string("consumer:invalid-order"),
        PARK_ERROR: string(detail),
    }
    assert len(detail) == PARK_DETAIL_MAX_CHARS
    assert [line.message for line in log.lines] == ["record parked by its consumer"]


def test_a_park_that_cannot_be_sent_leaves_the_record_failed_and_backed_off(
    sqs: Sqs, main_queues: ReplayQueues, replay_client: SQSClient
) -> None:
    queues = main_queues
    sqs.send(queues.main, Outgoing("invalid-2"))
    requests = RequestLog(replay_client)
    missing = ConsumerSettings(POLICY, operator_queue_url=f"{queues.operator.url}-missing")
    processor = BackoffBatchProcessor(
        replay_client, missing, raise_on_entire_batch_failure=False, logger=RecordingLog()
    )
    event = sqs.receive_event(queues.main)

    response = process_partial_response(
        event=event, record_handler=handler_failing(), processor=processor
    )

    assert failed_ids(response) == record_ids(event)
    assert visibility_timeouts(requests) == [2]
    assert sqs.total(queues.main) == 1  # still there, to be retried


def test_a_park_rule_parks_on_exception_classes_and_backs_off_the_rest(
    sqs: Sqs, main_queues: ReplayQueues, replay_client: SQSClient
) -> None:
    queues = main_queues
    for body in ("bad-json", "down"):
        sqs.send(queues.main, Outgoing(body))

    def record_handler(record: SQSRecord) -> None:
        if record.body == "bad-json":
            raise ValueError("Expecting value: line 1 column 1")
        raise ConnectionError("downstream unavailable")

    requests = RequestLog(replay_client)
    processor = BackoffBatchProcessor(
        replay_client, settings(queues), park_rule=park_on("unparseable", ValueError)
    )
    event = sqs.receive_event(queues.main)

    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor
    )

    assert failed_ids(response) == [r["messageId"] for r in event["Records"] if r["body"] == "down"]
    (parked,) = sqs.drain(queues.operator)
    assert parked["Body"] == "bad-json"
    assert attributes_of(parked) == {
        PARK_REASON: string("consumer:unparseable"),
        PARK_ERROR: string("Expecting value: line 1 column 1"),
    }
    assert visibility_timeouts(requests) == [2]


def test_a_batch_parked_whole_is_an_answer_not_an_error(
    sqs: Sqs, main_queues: ReplayQueues, replay_client: SQSClient
) -> None:
    queues = main_queues
    for n in range(3):
        sqs.send(queues.main, Outgoing(f"invalid-{n}"))
    processor = BackoffBatchProcessor(replay_client, settings(queues))
    event = sqs.receive_event(queues.main)

    response = process_partial_response(
        event=event, record_handler=handler_failing(), processor=processor
    )

    assert failed_ids(response) == []
    assert sorted(m["Body"] for m in sqs.drain(queues.operator)) == [
        "invalid-0",
        "invalid-1",
        "invalid-2",
    ]


def test_an_entire_failed_batch_still_raises_as_powertools_does(
    sqs: Sqs, main_queues: ReplayQueues, replay_client: SQSClient
) -> None:
    queues = main_queues
    sqs.send(queues.main, Outgoing("down"))
    processor = BackoffBatchProcessor(replay_client, settings(queues))
    event = sqs.receive_event(queues.main)

    with pytest.raises(BatchProcessingError):
        process_partial_response(
            event=event, record_handler=handler_failing("down"), processor=processor
        )

    # BatchSize 1, as the README shows: the failure is an answer, not an invocation error.
    answering = BackoffBatchProcessor(
        replay_client, settings(queues), raise_on_entire_batch_failure=False
    )
    response = process_partial_response(
        event=event, record_handler=handler_failing("down"), processor=answering
    )
    assert failed_ids(response) == record_ids(event)


@pytest.mark.moto_only(reason="LocalStack, like SQS, may hand out a FIFO queue group by group")
def test_fifo_a_group_stops_at_its_first_failure_and_backs_off_together(
    sqs: Sqs, replay_client: SQSClient
) -> None:
    queues = sqs.create_replay_queues("shop", fifo=True, max_receive_count=5)
    for n in (1, 2, 3):
        for group in ("a", "b"):
            sqs.send(queues.main, Outgoing(f"{group}{n}", group_id=f"group-{group}"))
    requests = RequestLog(replay_client)
    full = BackoffPolicy(base_seconds=2, multiplier=2, cap_seconds=8, jitter=Jitter.FULL)
    processor = BackoffFifoProcessor(
        replay_client, ConsumerSettings(full), skip_group_on_error=True
    )
    event = sqs.receive_event(queues.main)
    assert [r["body"] for r in event["Records"]] == ["a1", "b1", "a2", "b2", "a3", "b3"]

    response = process_partial_response(
        event=event, record_handler=handler_failing("a1"), processor=processor
    )

    a_ids = [r["messageId"] for r in event["Records"] if r["body"].startswith("a")]
    assert failed_ids(response) == a_ids  # a2 and a3 not attempted, as Powertools does
    (change,) = requests.of("ChangeMessageVisibilityBatch")
    timeouts = {entry["VisibilityTimeout"] for entry in change["Entries"]}
    assert len(change["Entries"]) == 3
    assert len(timeouts) == 1  # the group comes back together
    assert timeouts <= set(range(3))


def test_a_boto3_consumer_backs_off_or_parks_and_deletes(
    sqs: Sqs, main_queues: ReplayQueues, replay_client: SQSClient
) -> None:
    queues = main_queues
    sqs.send(queues.main, Outgoing("flaky"))
    sqs.send(queues.main, Outgoing("invalid-3"))
    requests = RequestLog(replay_client)
    received = replay_client.receive_message(
        QueueUrl=queues.main.url,
        MaxNumberOfMessages=10,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["ApproximateReceiveCount"],
    )["Messages"]
    flaky, invalid = sorted(received, key=lambda m: m["Body"])

    assert not settle_failure(
        replay_client, queues.main.url, flaky, RuntimeError("down"), settings(queues)
    )
    assert settle_failure(
        replay_client,
        queues.main.url,
        invalid,
        ParkMessage("invalid-order", "no sku"),
        settings(queues),
    )

    assert visibility_timeouts(requests) == [2]
    assert [m["Body"] for m in sqs.drain(queues.operator)] == ["invalid-3"]
    assert sqs.total(queues.main) == 1  # the parked one deleted, the flaky one hidden


def test_park_now_parks_and_deletes_as_0_1_0_did(
    sqs: Sqs, main_queues: ReplayQueues, replay_client: SQSClient
) -> None:
    queues = main_queues
    sqs.send(queues.main, Outgoing("invalid-4"))
    (received,) = replay_client.receive_message(
        QueueUrl=queues.main.url, MessageAttributeNames=["All"], WaitTimeSeconds=1
    )["Messages"]

    parked = park_now(
        replay_client, queues.main.url, received, ParkMessage("invalid-order"), settings(queues)
    )

    assert parked
    assert [m["Body"] for m in sqs.drain(queues.operator)] == ["invalid-4"]
    assert sqs.total(queues.main) == 0


# -- text: every detail is sent valid, the body never in it, a record's bad text fails alone --


@pytest.mark.parametrize(
    ("detail", "sent"),
    [
        pytest.param("row 3: \x00 in the name", "row 3: \\x00 in the name", id="nul"),
        pytest.param(
            "\x1b[31mERROR\x1b[0m sku missing", "\\x1b[31mERROR\\x1b[0m sku missing", id="ansi"
        ),
        pytest.param("name 'caf\udce9' is not UTF-8", "name 'caf\\udce9' is not UTF-8", id="lone"),
        pytest.param("bad\ufffe\x07 bytes", "bad\\ufffe\\x07 bytes", id="non-character"),
        pytest.param("ok: é ü 😀", "ok: é ü 😀", id="allowed-unicode"),
        pytest.param(
            "x" * (PARK_DETAIL_MAX_CHARS - 3) + "\x1b[0m",
            "x" * (PARK_DETAIL_MAX_CHARS - 3),
            id="escape-at-the-cut",
        ),
    ],
)
def test_a_detail_with_characters_sqs_refuses_is_parked_with_them_escaped(
    sqs: Sqs, main_queues: ReplayQueues, replay_client: SQSClient, detail: str, sent: str
) -> None:
    """SQS (and LocalStack) refuse these characters in an attribute value, and a lone
    surrogate cannot even be encoded: each is written as a visible escape, and the park
    happens."""
    queues = main_queues
    sqs.send(queues.main, Outgoing("invalid-9"))
    check = CharacterCheck(replay_client)
    processor = BackoffBatchProcessor(replay_client, settings(queues))
    event = sqs.receive_event(queues.main)

    def record_handler(record: SQSRecord) -> None:
        raise ParkMessage("invalid-order", detail)

    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor
    )

    assert failed_ids(response) == []
    assert check.refused == []
    (parked,) = sqs.drain(queues.operator)
    assert attributes_of(parked)[PARK_ERROR] == string(sent)
    assert sqs.total(queues.main) == 1  # in flight until Lambda deletes it, not backed off


def test_the_default_detail_leaves_out_an_exception_text_that_quotes_the_body(
    sqs: Sqs, main_queues: ReplayQueues, replay_client: SQSClient
) -> None:
    """Validation libraries quote their input (pydantic: `input_value=...`); the detail keeps
    the error's own words and never a run of 32 characters of the body."""
    queues = main_queues
    body = '{"orderId": "o-77", "card": "4111 1111 1111 1111", "holder": "Alice Example"}'
    sqs.send(queues.main, Outgoing(body))

    def record_handler(record: SQSRecord) -> None:
        raise ValueError(f"order rejected: {record.body} has no sku")

    processor = BackoffBatchProcessor(
        replay_client, settings(queues), park_rule=park_on("invalid-order", ValueError)
    )
    event = sqs.receive_event(queues.main)

    process_partial_response(event=event, record_handler=record_handler, processor=processor)

    (parked,) = sqs.drain(queues.operator)
    assert parked["Body"] == body
    detail = attributes_of(parked)[PARK_ERROR]["StringValue"]
    assert detail == "order rejected: [redacted] has no sku"
    assert "4111" not in detail


def test_a_users_detail_function_writes_the_detail(
    sqs: Sqs, main_queues: ReplayQueues, replay_client: SQSClient
) -> None:
    queues = main_queues
    sqs.send(queues.main, Outgoing('{"orderId": "o-78"}'))
    sqs.send(queues.main, Outgoing('{"orderId": "o-79"}'))

    def order_and_error(park: ParkMessage, body: str) -> str:
        return f"order {json.loads(body)['orderId']}: {park.detail}\x1b"

    def record_handler(record: SQSRecord) -> None:
        raise ParkMessage("invalid-order", "no sku")

    processor = BackoffBatchProcessor(replay_client, settings(queues), park_detail=order_and_error)
    process_partial_response(
        event=sqs.receive_event(queues.main), record_handler=record_handler, processor=processor
    )
    # The boto3 path: the Lambda path's two are in flight, so the receive gets the third.
    sqs.send(queues.main, Outgoing('{"orderId": "o-80"}'))
    (received,) = replay_client.receive_message(
        QueueUrl=queues.main.url, MessageAttributeNames=["All"], WaitTimeSeconds=1
    )["Messages"]
    assert settle_failure(
        replay_client,
        queues.main.url,
        received,
        ParkMessage("invalid-order", "no sku"),
        settings(queues),
        options=FailureOptions(park_detail=order_and_error),
    )

    details = sorted(
        attributes_of(m)[PARK_ERROR]["StringValue"] for m in sqs.drain(queues.operator)
    )
    assert details == [f"order o-{n}: no sku\\x1b" for n in (78, 79, 80)]


@pytest.mark.parametrize("where", ["body", "attribute"])
def test_a_record_whose_text_cannot_be_encoded_fails_alone_and_the_others_settle(
    sqs: Sqs, main_queues: ReplayQueues, replay_client: SQSClient, where: str
) -> None:
    """A hand-made record with a lone surrogate cannot be parked (no copy can be encoded):
    it fails and backs off alone, with one log line naming it and why; the rest of the batch
    is parked and succeeds as usual."""
    queues = main_queues
    for body in ("invalid-a", "invalid-b", "ok"):
        sqs.send(queues.main, Outgoing(body, {"tenant": string("acme")}))
    event = sqs.receive_event(queues.main)
    (broken,) = [r for r in event["Records"] if r["body"] == "invalid-b"]
    if where == "body":
        broken["body"] = "invalid-b caf\udce9"
    else:
        broken["messageAttributes"]["tenant"]["stringValue"] = "acm\ud800"
    log = RecordingLog()
    requests = RequestLog(replay_client)
    processor = BackoffBatchProcessor(replay_client, settings(queues), logger=log)

    response = process_partial_response(
        event=event, record_handler=handler_failing(), processor=processor
    )

    assert failed_ids(response) == [broken["messageId"]]
    assert [m["Body"] for m in sqs.drain(queues.operator)] == ["invalid-a"]
    errors = [line for line in log.lines if line.level == "error"]
    assert [(line.message, line.extra["message_id"]) for line in errors] == [
        ("cannot park: the record fails and is retried", broken["messageId"])
    ]
    assert "lone surrogate" in errors[0].extra["problem"]
    assert visibility_timeouts(requests) == [2]  # backed off like any failure
