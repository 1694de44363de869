"""What a main-queue consumer imports: `replay_attempt` and `VisibilityHeartbeat`.

The heartbeat tests run in real time against in-process moto (which honours visibility
timeouts): a 2 s queue visibility timeout, 0.5 s beats.
"""

from __future__ import annotations

import time
import warnings
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.consumer import AttributesNotReceivedWarning, VisibilityHeartbeat, replay_attempt
from dlq_replay.local.eventsource import lambda_record
from integration.harness import COUNT, REGION, Outgoing, Sqs, binary, number, string

if TYPE_CHECKING:
    from integration.harness import Queue
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef, MessageTypeDef


pytestmark = pytest.mark.emulator


def received(sqs: Sqs, queue: Queue, attributes: dict[str, MessageAttributeValueTypeDef]) -> Any:
    """Send one message and receive it as a boto3 consumer does (all message attributes)."""
    sqs.send(queue, Outgoing("work", attributes))
    (message,) = sqs.client.receive_message(
        QueueUrl=queue.url, MessageAttributeNames=["All"], MessageSystemAttributeNames=["All"]
    )["Messages"]
    return message


@pytest.mark.parametrize(
    ("attributes", "expected"),
    [
        pytest.param({}, 0, id="absent"),
        pytest.param({"other": string("x")}, 0, id="other-attributes-only"),
        pytest.param({COUNT: number(1)}, 1, id="one"),
        pytest.param({COUNT: number(7), "other": string("x")}, 7, id="seven"),
        pytest.param({COUNT: string("2")}, 2, id="string-typed"),
        pytest.param({COUNT: number("3", "Number.int")}, 3, id="custom-type"),
        pytest.param({COUNT: string("abc")}, 0, id="not-a-number"),
        pytest.param({COUNT: number("-1")}, 0, id="negative"),
        pytest.param({COUNT: number("2.5")}, 0, id="fraction"),
        pytest.param({COUNT: number("1000000000")}, 0, id="too-large"),
        pytest.param({COUNT: binary(b"\x01")}, 0, id="binary"),
    ],
)
def test_replay_attempt_from_a_boto3_message_and_a_lambda_record(
    sqs: Sqs, attributes: dict[str, MessageAttributeValueTypeDef], expected: int
) -> None:
    queue = sqs.create_queue("main")
    message: MessageTypeDef = received(sqs, queue, attributes)
    record = lambda_record(message, queue.arn, REGION)

    assert replay_attempt(message) == expected
    assert replay_attempt(record) == expected


def test_replay_attempt_reads_a_configured_attribute_name(sqs: Sqs) -> None:
    queue = sqs.create_queue("main")
    message = received(sqs, queue, {"retries": number(4), COUNT: number(1)})
    record = lambda_record(message, queue.arn, REGION)
    assert replay_attempt(message, "retries") == 4
    assert replay_attempt(record, "retries") == 4
    assert replay_attempt(record, "absent-name") == 0


def receive_one(client: SQSClient, queue_url: str) -> list[Any]:
    return client.receive_message(QueueUrl=queue_url, WaitTimeSeconds=0).get("Messages", [])


def test_heartbeat_keeps_the_message_invisible_past_its_visibility_timeout(sqs: Sqs) -> None:
    queue = sqs.create_queue("slow", {"VisibilityTimeout": "2"})
    sqs.send(queue, Outgoing("long work"))
    (message,) = receive_one(sqs.client, queue.url)
    received_at = time.monotonic()

    with VisibilityHeartbeat(
        sqs.client, queue.url, message["ReceiptHandle"], timeout=2, interval=0.5
    ) as heartbeat:
        # The work: 4 s, twice the queue's visibility timeout; nobody else may get the message.
        while time.monotonic() - received_at < 4:
            assert receive_one(sqs.client, queue.url) == [], (
                f"visible again after {time.monotonic() - received_at:.1f} s"
            )
            time.sleep(0.25)
    ended_at = time.monotonic()

    assert heartbeat.errors == []
    assert heartbeat.beats >= 5
    beats = heartbeat.beats
    # The beat stopped with the block: the message comes back after one more timeout.
    time.sleep(0.75)
    assert heartbeat.beats == beats
    # 2 s, and LocalStack's own tick, later when pytest-xdist workers share it.
    deadline = ended_at + 6
    while not (again := receive_one(sqs.client, queue.url)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [m["MessageId"] for m in again] == [message["MessageId"]]
    assert heartbeat.beats == beats


def test_heartbeat_stops_when_the_work_fails_and_lets_the_error_through(sqs: Sqs) -> None:
    queue = sqs.create_queue("failing", {"VisibilityTimeout": "2"})
    sqs.send(queue, Outgoing("doomed work"))
    (message,) = receive_one(sqs.client, queue.url)

    heartbeat = VisibilityHeartbeat(
        sqs.client, queue.url, message["ReceiptHandle"], timeout=2, interval=0.3
    )

    def work() -> None:
        with heartbeat:
            time.sleep(1.0)
            raise RuntimeError("work failed")

    with pytest.raises(RuntimeError, match="work failed"):
        work()
    failed_at = time.monotonic()

    beats = heartbeat.beats
    assert beats >= 2
    # No more extensions: the message is redelivered about one timeout (2 s) after the failure.
    deadline = failed_at + 3
    while not (again := receive_one(sqs.client, queue.url)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [m["MessageId"] for m in again] == [message["MessageId"]]
    assert time.monotonic() - failed_at > 1.0, "came back before the last extension ran out"
    assert heartbeat.beats == beats


def test_a_failed_beat_is_kept_not_raised_into_the_work(sqs: Sqs) -> None:
    queue = sqs.create_queue("gone")
    with VisibilityHeartbeat(
        sqs.client, queue.url, "not-a-receipt-handle", timeout=5, interval=0.1
    ) as heartbeat:
        time.sleep(0.5)
    assert heartbeat.beats == 0
    assert heartbeat.errors, "the failing ChangeMessageVisibility was not recorded"


def test_heartbeat_refuses_a_timeout_below_one_second(setup_client: SQSClient) -> None:
    with pytest.raises(ValueError, match="timeout"):
        VisibilityHeartbeat(setup_client, "https://example.invalid/q", "r", timeout=0)


def test_replay_attempt_warns_when_the_receive_did_not_ask_for_attributes(sqs: Sqs) -> None:
    queue = sqs.create_queue("main")
    sqs.send(queue, Outgoing("replayed twice", {COUNT: number(2)}))
    (bare,) = sqs.client.receive_message(QueueUrl=queue.url, VisibilityTimeout=0)["Messages"]

    with pytest.warns(AttributesNotReceivedWarning, match="MessageAttributeNames"):
        assert replay_attempt(bare) == 0  # the pitfall: the count is there, but not received

    (asked,) = sqs.client.receive_message(QueueUrl=queue.url, MessageAttributeNames=["All"])[
        "Messages"
    ]
    sqs.send(queue, Outgoing("first delivery, no attribute at all"))
    (plain,) = sqs.client.receive_message(
        QueueUrl=queue.url,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["ApproximateReceiveCount"],
    )["Messages"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert replay_attempt(asked) == 2
        assert replay_attempt(plain) == 0
