"""The SQS client is botocore's, configured through its public `Config` only: botocore checks
every request before it is sent, and the User-Agent names the tool beside the SDK."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ParamValidationError
from dlq_replay import __version__
from dlq_replay.sqs.client import sqs_client

QUEUE = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders"


class SentError(Exception):
    """Raised by the hook instead of sending: the request is what the test looks at."""


def test_a_malformed_request_is_refused_before_it_is_sent() -> None:
    sqs = sqs_client(region_name="eu-west-1")

    with pytest.raises(ParamValidationError, match="MaxNumberOfMessages"):
        sqs.receive_message(QueueUrl=QUEUE, MaxNumberOfMessages="ten")  # type: ignore[arg-type]


def test_the_user_agent_is_botocores_and_names_the_tool() -> None:
    sqs = sqs_client(region_name="eu-west-1")
    seen: list[str] = []

    def record(request: Any, **_: Any) -> None:
        seen.append(request.headers["User-Agent"].decode())
        raise SentError

    sqs.meta.events.register("before-send.sqs.GetQueueUrl", record)
    with pytest.raises(SentError):
        sqs.get_queue_url(QueueName="orders")

    assert seen[0].startswith("Boto3/")
    assert f"app/sqs-dlq-replay#{__version__}" in seen[0].split()
    assert "ua/2.1" in seen[0]
