"""The event builder: Lambda's SQS event, exactly as Lambda delivers it, from what
`ReceiveMessage` returns (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html).

Every record is built from a real message received from moto's SQS; the sample events in
`events/` (the documented shape, real MD5s) are the reference for the key sets.
"""

from __future__ import annotations

import base64
import copy
import gzip
import hashlib
import json
from typing import TYPE_CHECKING, Any

import pytest
from dlq_replay.core.attributes import from_lambda, from_sqs
from dlq_replay.core.messages import InboundMessage
from dlq_replay.local.eventsource import lambda_event, lambda_record
from integration.harness import (
    REGION,
    Outgoing,
    ReplayQueues,
    Sqs,
    binary,
    number,
    string,
)
from unit._support import EVENTS_DIR, RECORD_KEYS, SYSTEM_KEYS

if TYPE_CHECKING:
    from mypy_boto3_sqs.type_defs import MessageAttributeValueTypeDef, MessageTypeDef

FIFO_KEYS = {"SequenceNumber", "MessageGroupId", "MessageDeduplicationId"}
STRING_KEYS = {"stringValue", "stringListValues", "binaryListValues", "dataType"}
BINARY_KEYS = {"binaryValue", "stringListValues", "binaryListValues", "dataType"}

# Not UTF-8 in any reading: NUL, 0xff/0xfe, a lone continuation byte, a cut-off sequence.
RAW = b"\x00\xff\xfe\x80\x7f\xc3(not utf-8 \xe2\x82"
GZIPPED = gzip.compress(b'{"orderId": "o-1"}', mtime=0)
TRACE = "Root=1-6741a1b2-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1"
ATTRIBUTES: dict[str, MessageAttributeValueTypeDef] = {
    "tenant": string("acme"),
    "unicode": string("café ☃ 😀"),
    "tag": string("eu-west-1/zone-b", "String.custom"),
    "amount": number("12.50"),
    "priority": number(5, "Number.int"),
    "raw": binary(RAW),
    "payload": binary(GZIPPED, "Binary.gzip"),
}


def roundtrip_json(value: dict[str, Any]) -> dict[str, Any]:
    """Lambda hands the function JSON: the event must survive it unchanged."""
    loaded: dict[str, Any] = json.loads(json.dumps(value))
    return loaded


def test_standard_record_has_the_documented_keys_and_values(sqs: Sqs, queues: ReplayQueues) -> None:
    dead = sqs.dead_letter(
        queues.main,
        queues.dlq,
        [Outgoing("first: ünïcödé ✓", ATTRIBUTES, trace_header=TRACE), Outgoing("plain")],
    )
    event = lambda_event(dead, queues.dlq.arn, REGION)

    assert roundtrip_json(event) == event
    assert set(event) == {"Records"}
    first, plain = event["Records"]
    for record, message in zip(event["Records"], dead, strict=True):
        assert set(record) == RECORD_KEYS
        assert record["messageId"] == message["MessageId"]
        assert record["receiptHandle"] == message["ReceiptHandle"]
        assert record["body"] == message["Body"]
        assert record["md5OfBody"] == hashlib.md5(record["body"].encode()).hexdigest()
        assert record["eventSource"] == "aws:sqs"
        assert record["eventSourceARN"] == queues.dlq.arn
        assert record["awsRegion"] == REGION
        assert all(type(value) is str for value in record["attributes"].values())
        assert int(record["attributes"]["ApproximateReceiveCount"]) >= 1

    assert set(first["attributes"]) == SYSTEM_KEYS | {"AWSTraceHeader"}
    assert first["attributes"]["AWSTraceHeader"] == TRACE
    assert first["md5OfMessageAttributes"] == dead[0]["MD5OfMessageAttributes"]
    assert len(first["md5OfMessageAttributes"]) == 32
    attributes = first["messageAttributes"]
    assert set(attributes) == set(ATTRIBUTES)
    assert attributes["tenant"] == {
        "stringValue": "acme",
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "String",
    }
    assert attributes["priority"] == {
        "stringValue": "5",
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "Number.int",
    }
    assert attributes["raw"] == {
        "binaryValue": base64.b64encode(RAW).decode("ascii"),
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "Binary",
    }
    for name, item in attributes.items():
        assert item["dataType"] == ATTRIBUTES[name]["DataType"]
        if "BinaryValue" in ATTRIBUTES[name]:
            assert set(item) == BINARY_KEYS, name
            assert type(item["binaryValue"]) is str
            assert (
                base64.b64decode(item["binaryValue"], validate=True)
                == (ATTRIBUTES[name]["BinaryValue"])
            )
        else:
            assert set(item) == STRING_KEYS, name
            assert item["stringValue"] == ATTRIBUTES[name]["StringValue"]

    assert set(plain["attributes"]) == SYSTEM_KEYS
    assert plain["messageAttributes"] == {}
    assert plain["md5OfMessageAttributes"] is None


def test_fifo_record_from_a_real_fifo_queue(sqs: Sqs, fifo_queues: ReplayQueues) -> None:
    dead = sqs.dead_letter(
        fifo_queues.main,
        fifo_queues.dlq,
        [
            Outgoing("a-1", {"tenant": string("a")}, group_id="customer-a", dedup_id="o-1"),
            Outgoing("b-1", {"raw": binary(RAW)}, group_id="customer-b", dedup_id="o-2"),
        ],
    )
    event = roundtrip_json(lambda_event(dead, fifo_queues.dlq.arn, REGION))

    first, second = event["Records"]
    for record, group, dedup in ((first, "customer-a", "o-1"), (second, "customer-b", "o-2")):
        assert set(record) == RECORD_KEYS
        assert set(record["attributes"]) == SYSTEM_KEYS | FIFO_KEYS
        assert record["attributes"]["MessageGroupId"] == group
        assert record["attributes"]["MessageDeduplicationId"] == dedup
        assert record["attributes"]["SequenceNumber"].isdigit()
        assert record["eventSourceARN"] == fifo_queues.dlq.arn
        assert record["eventSourceARN"].endswith(".fifo")
    assert set(second["messageAttributes"]["raw"]) == BINARY_KEYS

    message = InboundMessage.from_lambda_record(second)
    assert message.message_group_id == "customer-b"
    assert message.queue_arn == fifo_queues.dlq.arn
    assert message.attributes == from_sqs(dead[1]["MessageAttributes"]).values
    assert message.receive_count == int(dead[1]["Attributes"]["ApproximateReceiveCount"])


def test_round_trip_through_inbound_message_is_byte_exact(sqs: Sqs, queues: ReplayQueues) -> None:
    (message,) = sqs.dead_letter(
        queues.main, queues.dlq, [Outgoing("the body", ATTRIBUTES, trace_header=TRACE)]
    )
    # Real SQS adds the source queue to a dead-lettered message; moto does not.
    with_source: MessageTypeDef = copy.deepcopy(message)
    with_source["Attributes"]["DeadLetterQueueSourceArn"] = queues.main.arn

    record = roundtrip_json(lambda_record(with_source, queues.dlq.arn, REGION))
    inbound = InboundMessage.from_lambda_record(record)

    assert record["attributes"]["DeadLetterQueueSourceArn"] == queues.main.arn
    assert inbound.message_id == message["MessageId"]
    assert inbound.receipt_handle == message["ReceiptHandle"]
    assert inbound.body == "the body"
    assert inbound.queue_arn == queues.dlq.arn
    assert inbound.dead_letter_source_arn == queues.main.arn
    assert inbound.trace_header == TRACE
    assert inbound.message_group_id is None
    assert inbound.dropped_attributes == {}
    # What the replay would send back is what the producer sent, byte for byte.
    assert {name: value.to_sqs() for name, value in inbound.attributes.items()} == ATTRIBUTES
    assert inbound.attributes["raw"].binary_value == RAW


def sample_files() -> list[str]:
    return [
        "dlq-standard.json",
        "dlq-binary-attributes.json",
        "dlq-fifo.json",
        # What Lambda and EventBridge write to a DLQ (sent there, not dead-lettered; same shape).
        "dlq-lambda.json",
        "dlq-lambda-destination.json",
        "dlq-eventbridge.json",
        "dlq-eventbridge-fifo.json",
    ]


@pytest.mark.parametrize("name", sample_files())
def test_same_shape_as_the_sample_events(sqs: Sqs, name: str) -> None:
    """Reproduce each sample record on moto (same body, attributes, FIFO keys, trace header),
    dead-letter it for real, and build its record: same keys everywhere, same attribute values,
    same MD5s as the sample's."""
    path = EVENTS_DIR / name
    if not path.exists():
        pytest.skip(f"events/{name} not written yet")
    samples: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))["Records"]
    fifo = samples[0]["eventSourceARN"].endswith(".fifo")
    queues = sqs.create_replay_queues("sample", fifo=fifo)
    outgoing = []
    for sample in samples:
        system = sample["attributes"]
        values = from_lambda(sample["messageAttributes"]).values
        outgoing.append(
            Outgoing(
                sample["body"],
                {key: value.to_sqs() for key, value in values.items()},
                group_id=system.get("MessageGroupId"),
                dedup_id=system.get("MessageDeduplicationId"),
                trace_header=system.get("AWSTraceHeader"),
            )
        )
    dead = sqs.dead_letter(queues.main, queues.dlq, outgoing)

    for sample, message in zip(samples, dead, strict=True):
        if "DeadLetterQueueSourceArn" in sample["attributes"]:
            # Real SQS adds it on the way into the DLQ; moto does not.
            message["Attributes"]["DeadLetterQueueSourceArn"] = queues.main.arn
        record = roundtrip_json(lambda_record(message, queues.dlq.arn, REGION))
        assert set(record) == set(sample)
        assert set(record["attributes"]) == set(sample["attributes"])
        assert set(record["messageAttributes"]) == set(sample["messageAttributes"])
        for key, item in sample["messageAttributes"].items():
            assert set(record["messageAttributes"][key]) == set(item), key
        assert record["messageAttributes"] == sample["messageAttributes"]
        assert record["body"] == sample["body"]
        assert record["md5OfBody"] == sample["md5OfBody"]
        assert record["md5OfMessageAttributes"] == sample["md5OfMessageAttributes"]
        assert record["eventSource"] == sample["eventSource"]
        assert record["awsRegion"] == sample["awsRegion"]
        for key in FIFO_KEYS - {"SequenceNumber"}:
            assert record["attributes"].get(key) == sample["attributes"].get(key)
