"""The failure path for consumers that receive with boto3 (no Lambda, no Powertools); the usage,
and the receive it needs, are in docs/consumer.md."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.consumer.failures import Failure, FailureOptions, FailurePath
from dlq_replay.core.failure import ParkMessage
from dlq_replay.core.messages import InboundMessage
from dlq_replay.core.settings import ConsumerSettings

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient


def settle_failure(
    sqs: SQSClient,
    queue_url: str,
    message: Mapping[str, Any],
    error: BaseException | None,
    settings: ConsumerSettings,
    *,
    held_seconds: int = 0,
    options: FailureOptions | None = None,
) -> bool:
    """Park (then delete) a message whose handler raised `ParkMessage` (or an error
    `options.park_rule` names), or hide it for its backoff delay: True when it was parked.
    `held_seconds`: time since the receive."""
    inbound = InboundMessage.from_boto3(message)
    path = FailurePath(sqs, settings, options)
    parked = path.settle(queue_url, [Failure(inbound, error)], held_seconds)
    if not parked:
        return False
    try:
        sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=inbound.receipt_handle)
    except (ClientError, BotoCoreError) as failure:
        # Parked already: the source copy comes back after its visibility timeout and may be
        # parked a second time (SQS delivers at least once anyway); nothing is lost.
        logger = options.logger if options is not None else None
        (logger or logging.getLogger("dlq_replay.consumer")).warning(
            "parked, but the source copy could not be deleted",
            extra={"message_id": inbound.message_id, "error": str(failure)},
        )
    return True


def park_now(
    sqs: SQSClient,
    queue_url: str,
    message: Mapping[str, Any],
    park: ParkMessage,
    settings: ConsumerSettings,
) -> bool:
    """Send a message to the operator queue now (`consumer:<reason>`), then delete it, without
    raising first; False when the park failed and the message backed off instead."""
    return settle_failure(sqs, queue_url, message, park, settings)
