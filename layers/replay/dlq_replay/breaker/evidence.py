"""What the breaker reads off AWS, only when the rule needs it; None when it cannot say."""

from __future__ import annotations

import functools
import json
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.breaker.rule import WINDOW_SECONDS, QueueTiming
from dlq_replay.core.queues import queue_name
from dlq_replay.sqs.depth import queue_depth, queue_time_left, sqs_metric

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

Clock = Callable[[], float]
# How often a value CloudWatch publishes each minute is read again, at most.
METRIC_READ_SECONDS = 60.0
SAMPLE_SECONDS = 2.0  # the worker's queue totals: one sample every two seconds at most
_UNREADABLE = (ClientError, BotoCoreError, KeyError, ValueError, TypeError, LookupError)
QueueUrl = str | Callable[[], str]  # a URL, or how to find it (Lambda: from its mapping)


def _url(queue_url: QueueUrl) -> str:
    return queue_url if isinstance(queue_url, str) else queue_url()


def main_queue_timing(sqs: SQSClient, queue_url: str) -> QueueTiming | None:
    """The main queue's visibility timeout and `maxReceiveCount`; None without a redrive policy."""
    try:
        found = sqs.get_queue_attributes(
            QueueUrl=queue_url, AttributeNames=["VisibilityTimeout", "RedrivePolicy"]
        )["Attributes"]
        redrive = json.loads(found.get("RedrivePolicy") or "{}")
        receives = int(redrive.get("maxReceiveCount", 0))
        visibility = float(found["VisibilityTimeout"])
    except _UNREADABLE:
        return None
    if receives < 1 or visibility < 0:
        return None
    return QueueTiming(visibility, receives)


def consumer_deleting(
    cloudwatch: Callable[[], Any], queue_url: str, *, clock: Clock = time.time
) -> Callable[[float, int], bool | None]:
    """Whether the main queue's consumer deleted at least `enough` messages since `start`
    (NumberOfMessagesDeleted, whole minutes); None without a datapoint (late, or off AWS)."""
    name = queue_name(queue_url)
    client = functools.cache(cloudwatch)  # made at the first read

    def deleting(start: float, enough: int) -> bool | None:
        first = math.ceil(start / 60.0) * 60.0  # whole minutes only: none from before `start`
        now = clock()
        if now - first < 60.0:
            return None
        try:
            response = client().get_metric_data(
                MetricDataQueries=[sqs_metric("deleted", "NumberOfMessagesDeleted", name, "Sum")],
                StartTime=datetime.fromtimestamp(first, UTC),
                EndTime=datetime.fromtimestamp(now, UTC),
            )
            values = [float(v) for r in response.get("MetricDataResults", []) for v in r["Values"]]
        except _UNREADABLE:
            return None
        return sum(values) >= max(1, enough) if values else None

    return deleting


class QueueTotals:
    """The consumer's deletions off AWS: the replay only moves messages between the main queue,
    the DLQ and the operator queue, so the total's fall is at least what the consumer deleted."""

    def __init__(
        self, sqs: SQSClient, queue_urls: Sequence[str], *, clock: Clock = time.time
    ) -> None:
        self._sqs = sqs
        self._urls = tuple(queue_urls)
        self._clock = clock
        self._lock = threading.Lock()
        self._samples: deque[tuple[float, int]] = deque()

    def sample(self) -> None:
        """Read the total when the last sample is older than SAMPLE_SECONDS."""
        now = self._clock()
        with self._lock:
            if self._samples and now - self._samples[-1][0] < SAMPLE_SECONDS:
                return
            try:
                total = sum(queue_depth(self._sqs, url).total for url in self._urls)
            except _UNREADABLE:
                return
            self._samples.append((now, total))
            while self._samples and self._samples[0][0] < now - WINDOW_SECONDS:
                self._samples.popleft()

    def deleting(self, start: float, enough: int) -> bool | None:
        """Whether the total fell by at least `enough` since `start`; without a sample from before
        it, a fall that large since the first still says so, a smaller one is None."""
        self.sample()
        with self._lock:
            if not self._samples:
                return None
            before = [total for when, total in self._samples if when <= start]
            fell = (before or [self._samples[0][1]])[-1] - self._samples[-1][1] >= max(1, enough)
            return fell if before or fell else None


def dlq_depth(sqs: SQSClient, queue_url: QueueUrl) -> Callable[[], int | None]:
    """The DLQ's depth as the probe watches it; None when SQS could not say."""

    def depth() -> int | None:
        try:
            return queue_depth(sqs, _url(queue_url)).total
        except _UNREADABLE:
            return None

    return depth


def dlq_time_left(
    sqs: SQSClient,
    cloudwatch: Callable[[], Any],
    queue_url: QueueUrl,
    *,
    clock: Clock = time.time,
    every: float = METRIC_READ_SECONDS,
) -> Callable[[], float | None]:
    """Seconds the DLQ's oldest message has left (None: unknown), read at most once `every`."""
    lock = threading.Lock()
    last: list[tuple[float, float | None]] = []  # (when read, what it said)
    client = functools.cache(cloudwatch)

    def left() -> float | None:
        now = clock()
        with lock:
            if last and now - last[0][0] < every:
                read_at, value = last[0]
                return None if value is None else value - (now - read_at)
            try:
                value = queue_time_left(sqs, client(), _url(queue_url))
            except _UNREADABLE:
                value = None
            last[:] = [(now, value)]
            return value

    return left
