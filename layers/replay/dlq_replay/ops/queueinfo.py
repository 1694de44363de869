"""What the operator tools need to know about a queue: its ARN, type, visibility timeout and
redrive policy, and which queues dead-letter into it; and what a move reads first (`preflight`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dlq_replay.core.queues import Arn, arn_name, is_fifo_url
from dlq_replay.ops.opserror import QueueNotFoundError
from dlq_replay.sqs.depth import QueueDepth, queue_depth
from dlq_replay.sqs.sources import dead_letter_sources

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


@dataclass(frozen=True, slots=True)
class RedrivePolicy:
    target_arn: str
    max_receive_count: int

    @property
    def target_name(self) -> str:
        return arn_name(self.target_arn)


DEFAULT_RETENTION_SECONDS = 345_600  # SQS's default MessageRetentionPeriod, 4 days


@dataclass(frozen=True, slots=True)
class QueueInfo:
    url: str
    arn: str
    fifo: bool
    visibility_timeout: int
    redrive: RedrivePolicy | None
    retention_seconds: int = DEFAULT_RETENTION_SECONDS  # SQS deletes older messages
    delay_seconds: int = 0  # the queue's DelaySeconds: every message waits this long first

    @property
    def name(self) -> str:
        return arn_name(self.arn)


def queue_info(sqs: SQSClient, url: str) -> QueueInfo:
    """A queue's settings; QueueNotFoundError naming the URL (SQS's own error does not)."""
    from botocore.exceptions import ClientError

    try:
        found = sqs.get_queue_attributes(
            QueueUrl=url,
            AttributeNames=[
                "QueueArn",
                "FifoQueue",
                "VisibilityTimeout",
                "RedrivePolicy",
                "MessageRetentionPeriod",
                "DelaySeconds",
            ],
        )["Attributes"]
    except ClientError as error:
        info = error.response.get("Error", {})
        code = str(info.get("Code", ""))
        if "NonExistentQueue" in code or code == "QueueDoesNotExist":
            message = str(info.get("Message", code))
            raise QueueNotFoundError(url, error.operation_name, message) from None
        raise
    redrive: RedrivePolicy | None = None
    if found.get("RedrivePolicy"):
        policy = json.loads(found["RedrivePolicy"])
        redrive = RedrivePolicy(str(policy["deadLetterTargetArn"]), int(policy["maxReceiveCount"]))
    return QueueInfo(
        url=url,
        arn=found.get("QueueArn", ""),
        fifo=found.get("FifoQueue", "false").lower() == "true" or is_fifo_url(url),
        visibility_timeout=int(found.get("VisibilityTimeout", "30")),
        redrive=redrive,
        retention_seconds=int(found.get("MessageRetentionPeriod", DEFAULT_RETENTION_SECONDS)),
        delay_seconds=int(found.get("DelaySeconds", "0")),
    )


def source_queue_url(sqs: SQSClient, arn: str, cache: dict[str, str | None]) -> str | None:
    """The URL of a `DeadLetterQueueSourceArn` (None: malformed or gone), looked up once."""
    from botocore.exceptions import ClientError

    if arn not in cache:
        try:
            parsed = Arn.queue(arn)
            cache[arn] = sqs.get_queue_url(
                QueueName=parsed.name, QueueOwnerAWSAccountId=parsed.account
            )["QueueUrl"]
        except (ValueError, ClientError):
            cache[arn] = None
    return cache[arn]


@dataclass(frozen=True, slots=True)
class Preflight:
    source: QueueInfo
    destination: QueueInfo | None  # None: none was named
    depth: QueueDepth  # the source's counters
    dead_letter_sources: list[str] | None  # the queues the source is DLQ of; None: not read


def preflight(
    sqs: SQSClient,
    source_url: str,
    destination_url: str | None,
    *,
    sources: bool,
    meanwhile: Callable[[], object] | None = None,
) -> Preflight:
    """What a move reads before its first receive, read at once (one after another the round
    trips would delay the first message), `meanwhile` run while they are in flight (importing
    the move's modules); an error is raised as it would be alone (the source's first)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4, thread_name_prefix="preflight") as pool:
        source = pool.submit(queue_info, sqs, source_url)
        depth = pool.submit(queue_depth, sqs, source_url)
        destination = pool.submit(queue_info, sqs, destination_url) if destination_url else None
        listed = pool.submit(dead_letter_sources, sqs, source_url) if sources else None
        if meanwhile is not None:
            meanwhile()
        return Preflight(
            source.result(),
            destination.result() if destination else None,
            depth.result(),
            listed.result() if listed else None,
        )
