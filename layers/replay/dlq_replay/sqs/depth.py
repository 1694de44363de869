"""How many messages a queue holds, as SQS's approximate counters say."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType

_COUNTERS: list[QueueAttributeNameType] = [
    "ApproximateNumberOfMessages",
    "ApproximateNumberOfMessagesNotVisible",
    "ApproximateNumberOfMessagesDelayed",
]


@dataclass(frozen=True, slots=True)
class QueueDepth:
    visible: int
    in_flight: int
    delayed: int

    @property
    def total(self) -> int:
        return self.visible + self.in_flight + self.delayed


def queue_depth(sqs: SQSClient, queue_url: str) -> QueueDepth:
    """The three approximate counters of one queue (eventually consistent, about a minute)."""
    found = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=_COUNTERS)["Attributes"]
    visible, in_flight, delayed = (int(found.get(name, "0")) for name in _COUNTERS)
    return QueueDepth(visible, in_flight, delayed)
