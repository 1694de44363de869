"""What a move reads before its first receive, read at once: each read is a round trip, and
one after another they would delay the first message by all of them. What the caller can do
meanwhile (`meanwhile`: import the move's modules) it does while they are in flight."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from dlq_replay.ops.queueinfo import QueueInfo, queue_info
from dlq_replay.sqs.depth import QueueDepth, queue_depth
from dlq_replay.sqs.sources import dead_letter_sources

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

_T = TypeVar("_T")


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
    """All requested at once, `meanwhile` run here while they are in flight; an error is
    raised as it would be alone (the source's first)."""
    with ThreadPoolExecutor(4, thread_name_prefix="preflight") as pool:
        source = pool.submit(queue_info, sqs, source_url)
        depth = pool.submit(queue_depth, sqs, source_url)
        destination = pool.submit(queue_info, sqs, destination_url) if destination_url else None
        listed = pool.submit(dead_letter_sources, sqs, source_url) if sources else None
        if meanwhile is not None:
            meanwhile()
        return Preflight(source.result(), _result(destination), depth.result(), _result(listed))


def _result(future: Future[_T] | None) -> _T | None:
    return None if future is None else future.result()
