"""Queue identities: ARNs, URLs and what the name says about the queue type."""

from __future__ import annotations

import re
from dataclasses import dataclass

QUEUE_ARN_PATTERN = re.compile(
    r"arn:(?P<partition>aws[a-z-]*):sqs:(?P<region>[a-z0-9-]+):(?P<account>\d{12}):"
    r"(?P<name>[A-Za-z0-9_-]{1,75}(?:\.fifo)?)"
)

# DNS suffix of the SQS endpoint per partition; the URL of a queue is built from it when a
# record names its source queue only by ARN (Lambda's DeadLetterQueueSourceArn).
_PARTITION_DNS_SUFFIX = {
    "aws": "amazonaws.com",
    "aws-cn": "amazonaws.com.cn",
    "aws-us-gov": "amazonaws.com",
    "aws-iso": "c2s.ic.gov",
    "aws-iso-b": "sc2s.sgov.gov",
    "aws-iso-e": "cloud.adc-e.uk",
    "aws-iso-f": "csp.hci.ic.gov",
    "aws-eusc": "amazonaws.eu",
}


@dataclass(frozen=True, slots=True)
class QueueArn:
    """A parsed SQS queue ARN."""

    partition: str
    region: str
    account: str
    name: str

    @classmethod
    def parse(cls, arn: str) -> QueueArn:
        match = QUEUE_ARN_PATTERN.fullmatch(arn)
        if not match:
            raise ValueError(f"not an SQS queue ARN: {arn!r}")
        return cls(**match.groupdict())

    @property
    def is_fifo(self) -> bool:
        return self.name.endswith(".fifo")

    def url(self, endpoint_url: str | None = None) -> str:
        """The queue URL: on `endpoint_url` when given (an emulator), else AWS's own endpoint."""
        if endpoint_url:
            return f"{endpoint_url.rstrip('/')}/{self.account}/{self.name}"
        suffix = _PARTITION_DNS_SUFFIX.get(self.partition, "amazonaws.com")
        return f"https://sqs.{self.region}.{suffix}/{self.account}/{self.name}"


def is_fifo_url(queue_url: str) -> bool:
    """FIFO queue names, and so their URLs, end in `.fifo` (an SQS naming rule)."""
    return queue_url.rstrip("/").endswith(".fifo")
