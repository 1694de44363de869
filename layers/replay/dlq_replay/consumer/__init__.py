"""Helpers for the consumer of the main queue (shipped in the layer, boto3 + Powertools only).

`replay_attempt(message)` reads how many replays a message has had; `VisibilityHeartbeat`
keeps a slow message hidden while it is worked on.
"""

from dlq_replay.consumer.visibility import (
    AttributesNotReceivedWarning,
    VisibilityHeartbeat,
    replay_attempt,
)

__all__ = ["AttributesNotReceivedWarning", "VisibilityHeartbeat", "replay_attempt"]
