"""How many messages a queue holds (`sqs.depth`, shared with the outage breaker)."""

from __future__ import annotations

from dlq_replay.sqs.depth import QueueDepth, queue_depth

__all__ = ["QueueDepth", "queue_depth"]
