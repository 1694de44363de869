"""Lambda's SQS event, built from what ReceiveMessage returns, exactly as Lambda's event source
mapping delivers it: camelCase keys, base64 binaries, system attributes as strings
(https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dlq_replay.core import attributes


def lambda_record(message: Mapping[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    parsed = attributes.from_sqs(message.get("MessageAttributes"))
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message.get("Body", ""),
        "attributes": {
            name: str(value) for name, value in (message.get("Attributes") or {}).items()
        },
        "messageAttributes": {name: value.to_lambda() for name, value in parsed.values.items()},
        "md5OfMessageAttributes": message.get("MD5OfMessageAttributes"),
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


def lambda_event(
    messages: Sequence[Mapping[str, Any]], queue_arn: str, region: str
) -> dict[str, Any]:
    return {"Records": [lambda_record(message, queue_arn, region) for message in messages]}
