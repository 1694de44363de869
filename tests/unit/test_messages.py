"""Records in (the shared events/ files), entries out, and the Lambda record builder."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

import pytest
from dlq_replay.core.attributes import Attribute
from dlq_replay.core.messages import InboundMessage, OutboundMessage, message_size
from dlq_replay.local.eventsource import lambda_event, lambda_record

from ._support import (
    DLQ_ARN,
    DLQ_FIFO_ARN,
    EVENTBRIDGE_DLQ_ATTRIBUTES,
    EVENTS_DIR,
    MAIN_FIFO,
    RECORD_KEYS,
    SOURCE_ARN,
    SYSTEM_KEYS,
    event_messages,
    event_records,
    sqs_attributes_md5,
)

EVENT_FILES = sorted(p.name for p in EVENTS_DIR.glob("*.json"))


def test_every_expected_event_file_exists() -> None:
    assert EVENT_FILES == [
        "dlq-at-attempt-limit.json",
        "dlq-bad-count.json",
        "dlq-binary-attributes.json",
        "dlq-eventbridge-fifo.json",
        "dlq-eventbridge-lambda.json",
        "dlq-eventbridge-unsupported.json",
        "dlq-eventbridge.json",
        "dlq-fifo.json",
        "dlq-lambda-destination.json",
        "dlq-lambda.json",
        "dlq-standard.json",
        "dlq-waiting.json",
    ]
    readme = (EVENTS_DIR / "README.md").read_text(encoding="utf-8")
    for name in EVENT_FILES:
        assert f"`{name}`" in readme


@pytest.mark.parametrize("name", EVENT_FILES)
def test_event_files_have_the_lambda_record_shape(name: str) -> None:
    records = event_records(name)
    assert records
    assert len({r["messageId"] for r in records}) == len(records)
    for record in records:
        assert set(record) == RECORD_KEYS
        assert record["eventSource"] == "aws:sqs"
        assert record["awsRegion"] == "us-east-1"
        assert record["eventSourceARN"] in (DLQ_ARN, DLQ_FIFO_ARN)
        assert set(record["attributes"]) >= SYSTEM_KEYS
        assert all(isinstance(v, str) for v in record["attributes"].values())
        assert record["md5OfBody"] == hashlib.md5(record["body"].encode()).hexdigest()
        attrs: dict[str, Any] = record["messageAttributes"]
        expected_md5 = sqs_attributes_md5(attrs) if attrs else None
        assert record["md5OfMessageAttributes"] == expected_md5
        for item in attrs.values():
            assert item["stringListValues"] == []
            assert item["binaryListValues"] == []
            assert ("stringValue" in item) != ("binaryValue" in item)


def test_standard_event() -> None:
    plain, traced = event_messages("dlq-standard.json")
    assert plain.message_id == "6f1c7b52-4a3e-4c41-9d0a-1f2e3d4c5b6a"
    assert plain.body == '{"orderId": "o-1001", "total": 42.5}'
    assert plain.attributes == {"tenant": Attribute("String", "acme")}
    assert plain.trace_header is None
    assert plain.dead_letter_source_arn == SOURCE_ARN
    assert plain.queue_arn == DLQ_ARN
    assert plain.receive_count == 1
    assert plain.message_group_id is None
    assert plain.receipt_handle.startswith("AQEB")
    assert traced.attributes == {}
    assert traced.trace_header is not None
    assert traced.trace_header.startswith("Root=1-")


def test_fifo_event() -> None:
    messages = event_messages("dlq-fifo.json")
    assert [m.message_group_id for m in messages] == ["customer-a", "customer-a", "customer-b"]
    assert {m.queue_arn for m in messages} == {DLQ_FIFO_ARN}
    records = event_records("dlq-fifo.json")
    sequence = [int(r["attributes"]["SequenceNumber"]) for r in records]
    assert sequence == sorted(sequence)
    assert all(r["attributes"]["MessageDeduplicationId"] for r in records)


def test_waiting_event() -> None:
    (waiting,) = event_messages("dlq-waiting.json")
    assert waiting.attributes["dlq-replay-not-before"] == Attribute("Number", "4102444800")
    assert waiting.attributes["sqs-dlq-replay-nb"] == Attribute("Number", "2")
    assert waiting.receive_count == 3


def string(message: InboundMessage, name: str) -> str:
    value = message.attributes[name].string_value
    assert value is not None, name
    return value


def test_lambda_dlq_events_carry_what_lambda_documents() -> None:
    """A function's async DLQ: the event unchanged, RequestID/ErrorCode/ErrorMessage typed as
    Lambda's docs say (invocation-async-retain-records.html#invocation-dlq)."""
    for message in event_messages("dlq-lambda.json"):
        assert set(message.attributes) == {"RequestID", "ErrorCode", "ErrorMessage"}
        assert message.attributes["RequestID"].data_type == "String"
        assert message.attributes["ErrorCode"] == Attribute("Number", "200")
        assert message.attributes["ErrorMessage"].data_type == "String"
        assert len(string(message, "ErrorMessage").encode()) <= 1024
        assert json.loads(message.body)["orderId"]
        assert message.dead_letter_source_arn is None  # Lambda sent it, not an SQS redrive


def test_destination_events_are_invocation_records() -> None:
    """An OnFailure destination's message: the invocation record as the body, no attributes."""
    for message in event_messages("dlq-lambda-destination.json"):
        assert message.attributes == {}
        invocation = json.loads(message.body)
        assert set(invocation) == {
            "version",
            "timestamp",
            "requestContext",
            "requestPayload",
            "responseContext",
            "responsePayload",
        }
        context = invocation["requestContext"]
        assert set(context) == {"requestId", "functionArn", "condition", "approximateInvokeCount"}
        assert context["functionArn"].startswith("arn:aws:lambda:us-east-1:123456789012:function:")
        assert context["condition"] == "RetriesExhausted"
        assert invocation["responsePayload"]["requestId"] == context["requestId"]


@pytest.mark.parametrize(
    ("name", "target_prefix"),
    [
        ("dlq-eventbridge.json", "arn:aws:sqs:"),
        ("dlq-eventbridge-lambda.json", "arn:aws:lambda:"),
        ("dlq-eventbridge-fifo.json", "arn:aws:sqs:"),
        ("dlq-eventbridge-unsupported.json", "arn:aws:kinesis:"),
    ],
)
def test_eventbridge_dlq_events_carry_the_six_attributes(name: str, target_prefix: str) -> None:
    """A rule target's DLQ (eb-rule-dlq.html): the event as the body, six attributes; the DLQ
    is a standard queue, so a FIFO target's record carries no group id."""
    for message in event_messages(name):
        assert set(message.attributes) == EVENTBRIDGE_DLQ_ATTRIBUTES
        assert {value.data_type for value in message.attributes.values()} == {"String"}
        assert string(message, "RULE_ARN").startswith("arn:aws:events:us-east-1:123456789012:rule/")
        assert string(message, "TARGET_ARN").startswith(target_prefix)
        condition = string(message, "EXHAUSTED_RETRY_CONDITION")
        assert condition in {"MaximumRetryAttempts", "MaximumEventAgeInSeconds"}
        assert int(string(message, "RETRY_ATTEMPTS")) in range(186)
        event = json.loads(message.body)
        assert {"version", "id", "detail-type", "source", "time", "detail"} <= set(event)
        assert message.message_group_id is None
        assert message.queue_arn == DLQ_ARN


def test_list_attributes_are_reported_as_dropped() -> None:
    record = event_records("dlq-standard.json")[0]
    record["messageAttributes"]["tags"] = {
        "stringListValues": ["a"],
        "binaryListValues": [],
        "dataType": "String",
    }
    msg = InboundMessage.from_lambda_record(record)
    assert msg.dropped_attributes == {"tags": "list values cannot be sent to SQS"}
    assert "tags" not in msg.attributes


def test_entry_shape_with_every_field() -> None:
    copy = OutboundMessage(
        record_id="r1",
        queue_url=MAIN_FIFO,
        body="hello",
        attributes={
            "b": Attribute("Binary", binary_value=b"\xff\x00"),
            "n": Attribute("Number", "1"),
        },
        delay_seconds=5,
        message_group_id="g",
        deduplication_id="r1-replay-1",
        trace_header="Root=1-x",
    )
    assert copy.to_entry("7") == {
        "Id": "7",
        "MessageBody": "hello",
        "MessageAttributes": {
            "b": {"DataType": "Binary", "BinaryValue": b"\xff\x00"},
            "n": {"DataType": "Number", "StringValue": "1"},
        },
        "DelaySeconds": 5,
        "MessageGroupId": "g",
        "MessageDeduplicationId": "r1-replay-1",
        "MessageSystemAttributes": {
            "AWSTraceHeader": {"DataType": "String", "StringValue": "Root=1-x"}
        },
    }
    bare = OutboundMessage(record_id="r2", queue_url=MAIN_FIFO, body="x", attributes={})
    assert bare.to_entry("0") == {"Id": "0", "MessageBody": "x"}


def test_message_size() -> None:
    assert message_size("\u00e9t\u00e9", {}) == 5
    assert message_size("ab", {"n": Attribute("Number", "10")}) == 2 + 1 + 6 + 2


def test_lambda_record_from_a_boto3_message_round_trips() -> None:
    received = {
        "MessageId": "m-1",
        "ReceiptHandle": "rh-1",
        "Body": "payload",
        "MD5OfBody": hashlib.md5(b"payload").hexdigest(),
        "MD5OfMessageAttributes": "abc",
        "Attributes": {
            "ApproximateReceiveCount": "2",
            "MessageGroupId": "g",
            "AWSTraceHeader": "Root=1-t",
        },
        "MessageAttributes": {
            "raw": {"DataType": "Binary.gz", "BinaryValue": b"\x00\xff"},
            "sqs-dlq-replay-nb": {"DataType": "Number", "StringValue": "1"},
        },
    }
    record = lambda_record(received, DLQ_FIFO_ARN, "us-east-1")
    assert set(record) == RECORD_KEYS
    assert (
        record["messageAttributes"]["raw"]["binaryValue"] == base64.b64encode(b"\x00\xff").decode()
    )
    assert record["eventSourceARN"] == DLQ_FIFO_ARN
    msg = InboundMessage.from_lambda_record(record)
    assert msg.attributes == {
        "raw": Attribute("Binary.gz", binary_value=b"\x00\xff"),
        "sqs-dlq-replay-nb": Attribute("Number", "1"),
    }
    assert msg.message_group_id == "g"
    assert msg.trace_header == "Root=1-t"
    assert msg.receive_count == 2
    assert lambda_event([received], DLQ_FIFO_ARN, "us-east-1") == {"Records": [record]}
