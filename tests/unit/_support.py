"""Shared constants and builders for the unit tests (plain functions, no fixtures)."""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dlq_replay.core.backoff import BackoffPolicy
from dlq_replay.core.messages import InboundMessage
from dlq_replay.core.settings import DEFAULT_COUNT_ATTRIBUTE, Settings

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"

ACCOUNT = "123456789012"
ENDPOINT = "https://sqs.us-east-1.amazonaws.com"
MAIN = f"{ENDPOINT}/{ACCOUNT}/orders"
DLQ = f"{ENDPOINT}/{ACCOUNT}/orders-dlq"
OPERATOR = f"{ENDPOINT}/{ACCOUNT}/orders-operator"
MAIN_FIFO = f"{ENDPOINT}/{ACCOUNT}/orders.fifo"
DLQ_FIFO = f"{ENDPOINT}/{ACCOUNT}/orders-dlq.fifo"
OPERATOR_FIFO = f"{ENDPOINT}/{ACCOUNT}/orders-operator.fifo"
DLQ_ARN = f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders-dlq"
DLQ_FIFO_ARN = f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders-dlq.fifo"
SOURCE_ARN = f"arn:aws:sqs:us-east-1:{ACCOUNT}:orders"
COUNT = DEFAULT_COUNT_ATTRIBUTE
# What EventBridge writes to a target's DLQ, as its documentation says (stated here, not taken
# from the package): the message attributes of a record, and the fields of every event.
EVENTBRIDGE_DLQ_ATTRIBUTES = frozenset(
    {
        "RULE_ARN",
        "TARGET_ARN",
        "ERROR_CODE",
        "ERROR_MESSAGE",
        "EXHAUSTED_RETRY_CONDITION",
        "RETRY_ATTEMPTS",
    }
)
EVENT_FIELDS = frozenset(
    {"version", "id", "detail-type", "source", "account", "time", "region", "resources", "detail"}
)
# The keys of a record of Lambda's SQS event, and the system attributes every record carries.
RECORD_KEYS = {
    "messageId",
    "receiptHandle",
    "body",
    "attributes",
    "messageAttributes",
    "md5OfBody",
    "md5OfMessageAttributes",
    "eventSource",
    "eventSourceARN",
    "awsRegion",
}
SYSTEM_KEYS = {
    "ApproximateReceiveCount",
    "SentTimestamp",
    "SenderId",
    "ApproximateFirstReceiveTimestamp",
}
# A realistic clock (past 10^9 epoch seconds), with a fraction to exercise the rounding.
NOW = 1_795_000_000.25


def load_event(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((EVENTS_DIR / name).read_text(encoding="utf-8"))
    return data


def event_records(name: str) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = load_event(name)["Records"]
    return records


def event_messages(name: str) -> list[InboundMessage]:
    return [InboundMessage.from_lambda_record(r) for r in event_records(name)]


def make_settings(
    *,
    main: str | None = MAIN,
    operator: str = OPERATOR,
    max_attempts: int = 3,
    backoff: BackoffPolicy | None = None,
    count_attribute: str = COUNT,
    allowed: frozenset[str] = frozenset(),
    endpoint: str | None = None,
) -> Settings:
    return Settings(
        operator_queue_url=operator,
        main_queue_url=main,
        max_attempts=max_attempts,
        backoff=backoff or BackoffPolicy(),
        count_attribute=count_attribute,
        allowed_source_queue_arns=allowed,
        endpoint_url_sqs=endpoint,
    )


def string_attr(value: str, data_type: str = "String") -> dict[str, Any]:
    """A message attribute as Lambda delivers a String or Number one."""
    return {
        "stringValue": value,
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": data_type,
    }


def binary_attr(value: bytes, data_type: str = "Binary") -> dict[str, Any]:
    """A message attribute as Lambda delivers a Binary one (base64)."""
    return {
        "binaryValue": base64.b64encode(value).decode(),
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": data_type,
    }


def lambda_record(
    *,
    message_id: str = "11111111-2222-4333-8444-555555555555",
    body: str = '{"orderId": "o-1"}',
    message_attributes: Mapping[str, Mapping[str, Any]] | None = None,
    system: Mapping[str, str] | None = None,
    queue_arn: str = DLQ_ARN,
) -> dict[str, Any]:
    """One record in the shape Lambda's SQS event source delivers."""
    return {
        "messageId": message_id,
        "receiptHandle": f"AQEB-{message_id}",
        "body": body,
        "attributes": {
            "ApproximateReceiveCount": "1",
            "SentTimestamp": "1763760000000",
            "SenderId": "AROAEXAMPLEEXAMPLE123:consumer",
            "ApproximateFirstReceiveTimestamp": "1763760000037",
            **(system or {}),
        },
        "messageAttributes": {k: dict(v) for k, v in (message_attributes or {}).items()},
        "md5OfBody": hashlib.md5(body.encode(errors="surrogatepass")).hexdigest(),
        "md5OfMessageAttributes": None,
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": "us-east-1",
    }


def message(
    *,
    message_id: str = "11111111-2222-4333-8444-555555555555",
    body: str = '{"orderId": "o-1"}',
    message_attributes: Mapping[str, Mapping[str, Any]] | None = None,
    system: Mapping[str, str] | None = None,
    queue_arn: str = DLQ_ARN,
) -> InboundMessage:
    return InboundMessage.from_lambda_record(
        lambda_record(
            message_id=message_id,
            body=body,
            message_attributes=message_attributes,
            system=system,
            queue_arn=queue_arn,
        )
    )


def sqs_attributes_md5(message_attributes: Mapping[str, Mapping[str, Any]]) -> str:
    """MD5OfMessageAttributes as SQS computes it, from Lambda-shaped attributes."""
    digest = hashlib.md5()

    def length_prefixed(data: bytes) -> None:
        digest.update(struct.pack("!I", len(data)))
        digest.update(data)

    for name in sorted(message_attributes):
        item = message_attributes[name]
        length_prefixed(name.encode())
        length_prefixed(str(item["dataType"]).encode())
        if item.get("binaryValue") is not None:
            digest.update(b"\x02")
            length_prefixed(base64.b64decode(item["binaryValue"]))
        else:
            digest.update(b"\x01")
            length_prefixed(str(item["stringValue"]).encode())
    return digest.hexdigest()


class FixedRandom:
    """A RandomSource that always returns the same value (clamped into the asked range)."""

    def __init__(self, value: int) -> None:
        self.value = value
        self.calls: list[tuple[int, int]] = []

    def randint(self, a: int, b: int) -> int:
        self.calls.append((a, b))
        return min(max(self.value, a), b)


class NoRandom:
    """A RandomSource that must not be consulted."""

    def randint(self, a: int, b: int) -> int:
        raise AssertionError(f"randint({a}, {b}) called where no draw is expected")
