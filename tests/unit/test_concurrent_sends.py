"""`BatchSender` with concurrency: up to N SendMessageBatch requests in flight, every failure
still mapped to its record, a FIFO queue's requests one after another in order."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from dlq_replay.core.messages import OutboundMessage
from dlq_replay.sqs.sending import BatchSender, SendFailure

from ._support import MAIN

FIFO = "https://sqs.us-east-1.amazonaws.com/123456789012/orders.fifo"


class SlowSqs:
    """SendMessageBatch at the boto3 boundary, recording how many calls were in flight at once
    and what each request held. Until `gather` calls have been in flight together, a call
    waits (at most `patience` s) for the others: overlap is then certain when the sender allows
    it, however busy the machine, and absent when it does not."""

    def __init__(
        self, gather: int = 1, refuse: frozenset[str] = frozenset(), patience: float = 2
    ) -> None:
        self.gather = gather
        self.patience = patience
        self.refuse = refuse  # bodies SQS refuses, entry by entry
        self.fail_request_with = ""  # a body whose whole request raises
        self.lock = threading.Condition()
        self.in_flight = 0
        self.most_in_flight = 0
        self.by_queue: Counter[str] = Counter()  # in flight now, per queue
        self.most_by_queue: Counter[str] = Counter()
        self.requests: list[tuple[str, list[str]]] = []

    def send_message_batch(self, QueueUrl: str, Entries: list[Any]) -> dict[str, Any]:  # noqa: N803
        bodies = [entry["MessageBody"] for entry in Entries]
        with self.lock:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            self.by_queue[QueueUrl] += 1
            self.most_by_queue[QueueUrl] = max(
                self.most_by_queue[QueueUrl], self.by_queue[QueueUrl]
            )
            self.requests.append((QueueUrl, bodies))
            self.lock.notify_all()
            self.lock.wait_for(lambda: self.most_in_flight >= self.gather, timeout=self.patience)
        try:
            if self.fail_request_with in bodies:
                raise ClientError(
                    {"Error": {"Code": "ServiceUnavailable", "Message": "later"}},
                    "SendMessageBatch",
                )
            return {
                "Successful": [
                    {"Id": e["Id"]} for e in Entries if e["MessageBody"] not in self.refuse
                ],
                "Failed": [
                    {"Id": e["Id"], "Code": "InvalidMessageContents", "SenderFault": True}
                    for e in Entries
                    if e["MessageBody"] in self.refuse
                ],
            }
        finally:
            with self.lock:
                self.in_flight -= 1
                self.by_queue[QueueUrl] -= 1


def copies(count: int, queue_url: str = MAIN, prefix: str = "m") -> list[OutboundMessage]:
    return [
        OutboundMessage(
            record_id=f"{prefix}{i:03}",
            queue_url=queue_url,
            body=f"{prefix}{i:03}",
            attributes={},
            message_group_id="g" if queue_url == FIFO else None,
            deduplication_id=f"{prefix}{i:03}" if queue_url == FIFO else None,
        )
        for i in range(count)
    ]


@pytest.mark.parametrize("concurrency", [1, 4, 8])
def test_requests_of_a_standard_queue_overlap_up_to_the_concurrency(concurrency: int) -> None:
    sqs = SlowSqs(gather=concurrency)

    failures = BatchSender(sqs, concurrency).send(copies(200))  # type: ignore[arg-type]

    assert failures == {}
    assert len(sqs.requests) == 20
    assert sqs.most_in_flight == concurrency
    sent = sorted(body for _, bodies in sqs.requests for body in bodies)
    assert sent == [f"m{i:03}" for i in range(200)]  # each exactly once


@pytest.mark.parametrize(("budget_in_requests", "most_in_flight"), [(3, 3), (0.5, 1)])
def test_the_payload_in_flight_is_bounded_too(
    budget_in_requests: float, most_in_flight: int
) -> None:
    """Requests of big messages go fewer at once than `concurrency` (memory); one bigger than
    the whole budget still goes, alone."""
    sqs = SlowSqs(gather=8, patience=0.2)
    messages = copies(80)
    request_bytes = sum(message.size_bytes for message in messages[:10])
    budget = int(request_bytes * budget_in_requests)

    failures = BatchSender(sqs, 8, max_in_flight_bytes=budget).send(messages)  # type: ignore[arg-type]

    assert failures == {}
    assert sqs.most_in_flight == most_in_flight
    assert sorted(body for _, bodies in sqs.requests for body in bodies) == [
        f"m{i:03}" for i in range(80)
    ]


def test_failures_are_mapped_to_their_records_whatever_the_order() -> None:
    sqs = SlowSqs(gather=8, refuse=frozenset({"m005", "m117", "m199"}))
    sqs.fail_request_with = "m150"  # the whole request m150-m159 fails

    failures = BatchSender(sqs, 8).send(copies(200))  # type: ignore[arg-type]

    refused = SendFailure("InvalidMessageContents", "", True)
    unavailable = SendFailure("ServiceUnavailable", "later", False, unconfirmed=True)  # a 5xx
    assert failures == {
        "m005": refused,
        "m117": refused,
        "m199": refused,
        **{f"m{i:03}": unavailable for i in range(150, 160)},
    }


def test_a_fifo_queue_is_sent_in_order_one_request_at_a_time() -> None:
    sqs = SlowSqs(gather=8)
    fifo = copies(35, FIFO, "f")

    failures = BatchSender(sqs, 8).send([*fifo, *copies(100)])  # type: ignore[arg-type]

    assert failures == {}
    fifo_requests = [bodies for url, bodies in sqs.requests if url == FIFO]
    assert fifo_requests == [
        [f"f{i:03}" for i in range(0, 10)],
        [f"f{i:03}" for i in range(10, 20)],
        [f"f{i:03}" for i in range(20, 30)],
        [f"f{i:03}" for i in range(30, 35)],
    ]
    # Never two FIFO requests at once (8 calls gathered, so any that could overlap did),
    # while the standard queue's requests ran beside them.
    assert sqs.most_by_queue[FIFO] == 1
    assert sqs.most_by_queue[MAIN] == 7


def test_one_request_is_sent_on_the_calling_thread() -> None:
    threads: list[str] = []

    class Recording(SlowSqs):
        def send_message_batch(self, QueueUrl: str, Entries: list[Any]) -> dict[str, Any]:  # noqa: N803
            threads.append(threading.current_thread().name)
            return super().send_message_batch(QueueUrl, Entries)

    BatchSender(Recording(), 8).send(copies(10))  # type: ignore[arg-type]

    assert threads == [threading.current_thread().name]


def test_concurrency_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        BatchSender(SlowSqs(), 0)  # type: ignore[arg-type]


class CutOffSqs:
    """Every request fails with one botocore exception, as after botocore's own retries."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def send_message_batch(self, **request: Any) -> dict[str, Any]:
        raise self.error


@pytest.mark.parametrize(
    ("error", "unconfirmed"),
    [
        (ReadTimeoutError(endpoint_url=MAIN), True),  # sent, no answer: it may have been written
        (ConnectionClosedError(endpoint_url=MAIN), True),
        (EndpointConnectionError(endpoint_url=MAIN), False),  # never reached SQS
        (ConnectTimeoutError(endpoint_url=MAIN), False),
    ],
)
def test_a_request_cut_off_mid_way_is_unconfirmed(error: Exception, unconfirmed: bool) -> None:
    failures = BatchSender(CutOffSqs(error)).send(copies(3))  # type: ignore[arg-type]

    assert {f.code for f in failures.values()} == {type(error).__name__}
    assert [f.unconfirmed for f in failures.values()] == [unconfirmed] * 3
    assert not any(f.permanent for f in failures.values())
