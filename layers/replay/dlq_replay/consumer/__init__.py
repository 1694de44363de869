"""Helpers for the consumer of the main queue (shipped in the layer, boto3 + Powertools only).

`replay_attempt(message)` reads how many replays a message has had, `origin_id(message)` the
id to deduplicate it by across replays; `VisibilityHeartbeat`
keeps a slow message hidden while it is worked on. Backoff before the DLQ: in Lambda,
`BackoffBatchProcessor` / `BackoffFifoProcessor` with Powertools' `process_partial_response`;
with boto3, `settle_failure`. Either way a handler that raises `ParkMessage(reason, detail)`
sends its message to the operator queue at once (or `park_rule=park_on("invalid", ValueError)`
parks on exception classes). `ConsumerSettings(BackoffPolicy(...))` builds the settings in
code, `ConsumerSettings.from_env(os.environ)` from the environment.
"""

from dlq_replay.consumer.failures import FailureOptions
from dlq_replay.consumer.processor import BackoffBatchProcessor, BackoffFifoProcessor
from dlq_replay.consumer.settle import park_now, settle_failure
from dlq_replay.consumer.visibility import (
    AttributesNotReceivedWarning,
    VisibilityHeartbeat,
    origin_id,
    replay_attempt,
)
from dlq_replay.core.backoff import BackoffPolicy, Jitter
from dlq_replay.core.failure import (
    ParkDetail,
    ParkMessage,
    body_free_detail,
    park_on,
)
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
