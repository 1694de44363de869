"""`purge`: PurgeQueue on one queue, with what it held just before.

SQS deletes every message of the queue, in flight and delayed ones too, within 60 seconds,
and refuses a second purge of the same queue within 60 seconds (PurgeQueueInProgress).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.queueinfo import QueueInfo
from dlq_replay.sqs.depth import QueueDepth, queue_depth

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

PURGE_INTERVAL_SECONDS = 60


@dataclass(frozen=True, slots=True)
class PurgeResult:
    queue: str  # URL
    before: QueueDepth  # the approximate counters just before the purge

    @property
    def purged(self) -> int:
        """About how many messages the purge removes (SQS's counters are approximate)."""
        return self.before.total


def purge_in_progress(error: ClientError) -> bool:
    code = str(error.response.get("Error", {}).get("Code", ""))
    return "PurgeQueueInProgress" in code


def depth_before_purge(sqs: SQSClient, queue: QueueInfo) -> QueueDepth:
    """What a purge would remove: every message, visible, in flight and delayed."""
    return queue_depth(sqs, queue.url)


def purge(sqs: SQSClient, queue: QueueInfo, before: QueueDepth) -> PurgeResult:
    """PurgeQueue; OpsError with one line when SQS refuses it for a purge still in progress."""
    try:
        sqs.purge_queue(QueueUrl=queue.url)
    except ClientError as error:
        if purge_in_progress(error):
            raise OpsError(
                f"{queue.name}: a purge is already in progress (SQS allows one purge of a "
                f"queue every {PURGE_INTERVAL_SECONDS} seconds): nothing more was purged; "
                "try again in a minute"
            ) from None
        raise
    return PurgeResult(queue.url, before)
