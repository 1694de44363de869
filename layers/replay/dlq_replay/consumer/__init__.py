"""Helpers for the consumer of the main queue (docs/consumer.md): backoff before the DLQ in
Lambda or with boto3, where a handler that raises `ParkMessage` parks its message at once."""

from dlq_replay.consumer.failures import (
    BackoffBatchProcessor,
    BackoffFifoProcessor,
    FailureOptions,
    park_now,
    settle_failure,
)
from dlq_replay.consumer.visibility import (
    AttributesNotReceivedWarning,
    VisibilityHeartbeat,
    origin_id,
    replay_attempt,
)
from dlq_replay.core.backoff import BackoffPolicy, Jitter
from dlq_replay.core.failure import ParkDetail, ParkMessage, body_free_detail, park_on
from dlq_replay.core.settings import ConsumerSettings
from dlq_replay.core.text import PARK_DETAIL_MAX_CHARS

__all__ = [
    "PARK_DETAIL_MAX_CHARS",
    "AttributesNotReceivedWarning",
    "BackoffBatchProcessor",
    "BackoffFifoProcessor",
    "BackoffPolicy",
    "ConsumerSettings",
    "FailureOptions",
    "Jitter",
    "ParkDetail",
    "ParkMessage",
    "VisibilityHeartbeat",
    "body_free_detail",
    "origin_id",
    "park_now",
    "park_on",
    "replay_attempt",
    "settle_failure",
]
