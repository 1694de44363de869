"""The worker's first call (the DLQ's ARN) rides out what polls ride out: throttling, 5xx and
an unreachable endpoint are retried, logged, for a bounded time; what cannot heal ends it at
once. SQS's answers come from botocore's Stubber on a real client."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import boto3
import pytest
from botocore.exceptions import ClientError, EndpointConnectionError, NoCredentialsError
from botocore.stub import Stubber
from dlq_replay.local.eventsource import can_heal, queue_arn_when_reachable

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

URL = "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq"
ARN = "arn:aws:sqs:us-east-1:123456789012:orders-dlq"
REQUEST = {"QueueUrl": URL, "AttributeNames": ["QueueArn"]}


class PausesRecorded(threading.Event):
    """A stop event whose waits return at once, recording how long each would have been."""

    def __init__(self, stop_after: int | None = None) -> None:
        super().__init__()
        self.pauses: list[float] = []
        self.stop_after = stop_after

    def wait(self, timeout: float | None = None) -> bool:
        self.pauses.append(float(timeout or 0))
        return self.stop_after is not None and len(self.pauses) >= self.stop_after


@pytest.fixture
def sqs() -> SQSClient:
    return boto3.client(
        "sqs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x"
    )


@pytest.fixture
def stub(sqs: SQSClient) -> Iterator[Stubber]:
    with Stubber(sqs) as stubber:
        yield stubber


def throttled(stub: Stubber, times: int) -> None:
    for _ in range(times):
        stub.add_client_error(
            "get_queue_attributes",
            service_error_code="RequestThrottled",
            http_status_code=400,
            expected_params=REQUEST,
        )


def test_throttling_and_5xx_are_retried_with_growing_logged_pauses(
    sqs: SQSClient, stub: Stubber, caplog: pytest.LogCaptureFixture
) -> None:
    throttled(stub, 2)
    stub.add_client_error("get_queue_attributes", "InternalError", http_status_code=500)
    stub.add_response("get_queue_attributes", {"Attributes": {"QueueArn": ARN}}, REQUEST)
    stop = PausesRecorded()

    with caplog.at_level(logging.WARNING):
        arn = queue_arn_when_reachable(sqs, URL, stop, logging.getLogger("t"))

    assert arn == ARN
    assert stop.pauses == [1.0, 2.0, 4.0]
    assert [r.getMessage() for r in caplog.records] == ["cannot read the queue yet; retrying"] * 3
    stub.assert_no_pending_responses()


def test_an_error_that_cannot_heal_ends_it_at_once(sqs: SQSClient, stub: Stubber) -> None:
    stub.add_client_error(
        "get_queue_attributes",
        service_error_code="AWS.SimpleQueueService.NonExistentQueue",
        http_status_code=400,
    )
    stop = PausesRecorded()

    with pytest.raises(ClientError, match="NonExistentQueue"):
        queue_arn_when_reachable(sqs, URL, stop, logging.getLogger("t"))

    assert stop.pauses == []


def test_patience_is_bounded_then_the_last_error_ends_it(sqs: SQSClient, stub: Stubber) -> None:
    throttled(stub, 4)
    now = iter(range(0, 1000, 100))  # each look at the clock: 100 s later
    stop = PausesRecorded()

    with pytest.raises(ClientError, match="RequestThrottled"):
        queue_arn_when_reachable(
            sqs, URL, stop, logging.getLogger("t"), patience=250, clock=lambda: next(now)
        )

    assert len(stop.pauses) == 2  # at 100 s and 200 s; at 300 s the patience is spent


def test_a_stop_while_waiting_ends_it_quietly(sqs: SQSClient, stub: Stubber) -> None:
    throttled(stub, 1)

    arn = queue_arn_when_reachable(sqs, URL, PausesRecorded(1), logging.getLogger("t"))

    assert arn is None


def client_error(code: str, status: int) -> ClientError:
    response: Any = {"Error": {"Code": code}, "ResponseMetadata": {"HTTPStatusCode": status}}
    return ClientError(response, "GetQueueAttributes")


@pytest.mark.parametrize(
    ("error", "heals"),
    [
        (EndpointConnectionError(endpoint_url=URL), True),
        (NoCredentialsError(), False),
        (client_error("AccessDenied", 403), False),
        (client_error("ThrottlingException", 400), True),
        (client_error("ServiceUnavailable", 503), True),
    ],
)
def test_what_can_heal(error: Exception, heals: bool) -> None:
    assert can_heal(error) is heals
