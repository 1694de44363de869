"""A park-now whatever its detail: `settle_failure` with any text as the detail sends a request
SQS takes, checked on the wire shape (a botocore Stubber answers; an event hook checks every
outgoing body and String value against SQS's documented characters)."""

from __future__ import annotations

from typing import Any

import boto3
from botocore.stub import ANY, Stubber
from dlq_replay.consumer import (
    PARK_DETAIL_MAX_CHARS,
    BackoffPolicy,
    ConsumerSettings,
    FailureOptions,
    Jitter,
    ParkMessage,
    settle_failure,
)
from hypothesis import HealthCheck, example, given, settings
from integration.harness import CharacterCheck

from .test_text import ANY_TEXT

QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/orders"
OPERATOR = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-operator"
SETTINGS = ConsumerSettings(BackoffPolicy(1, 2, 8, Jitter.NONE), operator_queue_url=OPERATOR)


class Silent:
    def debug(self, msg: str, *args: Any, **kwargs: Any) -> None: ...
    def info(self, msg: str, *args: Any, **kwargs: Any) -> None: ...
    def warning(self, msg: str, *args: Any, **kwargs: Any) -> None: ...
    def error(self, msg: str, *args: Any, **kwargs: Any) -> None: ...


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ANY_TEXT)
@example("\x1b[31mERROR\x1b[0m \x00 caf\udce9 \ufffe")
@example("x" * (PARK_DETAIL_MAX_CHARS - 1) + "\udcff")
def test_a_park_is_sent_valid_whatever_its_detail(detail: str) -> None:
    sqs = boto3.client(
        "sqs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )
    check = CharacterCheck(sqs)
    message = {
        "MessageId": "m-1",
        "ReceiptHandle": "r-1",
        "Body": '{"orderId": "o-1"}',
        "Attributes": {"ApproximateReceiveCount": "1"},
        "MessageAttributes": {},
    }
    with Stubber(sqs) as stub:
        stub.add_response(
            "send_message_batch",
            {
                "Successful": [{"Id": "0", "MessageId": "p-1", "MD5OfMessageBody": "0" * 32}],
                "Failed": [],
            },
            {"QueueUrl": OPERATOR, "Entries": ANY},
        )
        stub.add_response("delete_message", {}, {"QueueUrl": QUEUE, "ReceiptHandle": "r-1"})

        parked = settle_failure(
            sqs,
            QUEUE,
            message,
            ParkMessage("invalid", detail),
            SETTINGS,
            options=FailureOptions(logger=Silent()),
        )

        stub.assert_no_pending_responses()
    assert parked
    assert check.refused == []
    assert all(len(text) <= PARK_DETAIL_MAX_CHARS for text in check.details)
