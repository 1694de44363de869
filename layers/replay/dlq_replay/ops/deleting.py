"""`delete`: delete the messages a selection takes, each batch as soon as it is received (within
the receive budget, as `peek` does); the others stay hidden while the run lasts and are given
back at the end. `purge`: PurgeQueue on one queue, with what it held just before (it takes in
flight and delayed messages too, and SQS allows one purge of a queue every 60 seconds).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from botocore.exceptions import ClientError

from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.queueinfo import QueueInfo
from dlq_replay.ops.receivememory import ReceiveMemory
from dlq_replay.ops.receiving import Receiving, usable_budget
from dlq_replay.ops.select import Selector
from dlq_replay.sqs.depth import QueueDepth

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

PURGE_INTERVAL_SECONDS = 60


@dataclass(frozen=True, slots=True)
class DeleteRequest:
    source: QueueInfo
    selector: Selector = field(default_factory=Selector)  # empty: every message
    limit: int | None = None  # delete at most this many
    hide_seconds: int = 120
    wait_seconds: int = 1
    reserve: int = 1


@dataclass(frozen=True, slots=True)
class DeleteTally:
    deleted: int = 0
    skipped: int = 0  # received and not selected (or past --limit): given back
    failed: int = 0  # selected, and SQS did not delete it: still in the queue
    seen: int = 0  # received
    stopped: str | None = None  # why it stopped before the queue was empty (the budget)
    interrupted: bool = False  # a stop token (a signal) ended it early
    not_released: int = 0  # skipped messages SQS refused to make visible again at once
    hidden_until: float | None = None  # epoch seconds: when those come back by themselves

    @property
    def adds_up(self) -> bool:
        return self.seen == self.deleted + self.skipped + self.failed


class Deleter:
    """One delete run; `tally()` may be read from another thread while `run` goes on."""

    def __init__(
        self,
        sqs: SQSClient,
        request: DeleteRequest,
        *,
        stop: threading.Event | None = None,
        now: Callable[[], float] = time.time,
        memory: ReceiveMemory | None = None,
    ) -> None:
        self.request = request
        self.stop = stop or threading.Event()
        self.now = now
        budget = usable_budget(sqs, request.source, request.reserve)
        if memory is not None and budget is not None:
            # Deleting every message it receives may spend the kept receive; a selection or a
            # limit gives some back, so it keeps the reserve, as a read does.
            memory.check(
                request.source,
                budget,
                takes_all=request.selector.empty and request.limit is None,
                taken=request.selector.message_ids,  # chosen by id (the console)
            )
        self.memory = memory  # what the run saw goes there (and what it deleted leaves)
        self.receiving = Receiving(
            sqs,
            request.source.url,
            budget,
            request.hide_seconds,
            request.wait_seconds,
            stop=self.stop,
        )
        self.deleted = self.failed = self.not_released = 0
        self.seen = 0  # once released (the handles are gone then)

    def run(self, on_progress: Callable[[DeleteTally], None] | None = None) -> DeleteTally:
        selector = self.request.selector
        try:
            for batch in self.receiving.batches(
                self.request.limit, lambda m: selector.takes(m, self.now())
            ):
                done = self.receiving.delete(batch)
                self.deleted += len(done)
                self.failed += len(batch) - len(done)
                if on_progress is not None:
                    on_progress(self.tally())
        finally:
            # What was not deleted: the skipped ones given back now, the failed ones too.
            self.seen = self.deleted + len(self.receiving.handles)
            self.not_released = self.receiving.release()
            if self.memory is not None:
                self.memory.record(self.request.source, self.receiving.sighting)
        return self.tally()

    def tally(self) -> DeleteTally:
        seen = max(self.seen, self.deleted + len(self.receiving.handles))
        return DeleteTally(
            deleted=self.deleted,
            skipped=seen - self.deleted - self.failed,
            failed=self.failed,
            seen=seen,
            stopped=self.receiving.stopped,
            interrupted=self.stop.is_set(),
            not_released=self.not_released,
            hidden_until=self.receiving.hidden_until if self.not_released else None,
        )


@dataclass(frozen=True, slots=True)
class PurgeResult:
    queue: str  # URL
    before: QueueDepth  # the approximate counters just before the purge

    @property
    def purged(self) -> int:
        """About how many messages the purge removes (SQS's counters are approximate)."""
        return self.before.total


def purge(sqs: SQSClient, queue: QueueInfo, before: QueueDepth) -> PurgeResult:
    """PurgeQueue; OpsError with one line when SQS refuses it for a purge still in progress."""
    try:
        sqs.purge_queue(QueueUrl=queue.url)
    except ClientError as error:
        if "PurgeQueueInProgress" in str(error.response.get("Error", {}).get("Code", "")):
            raise OpsError(
                f"{queue.name}: a purge is already in progress (SQS allows one purge of a "
                f"queue every {PURGE_INTERVAL_SECONDS} seconds): nothing more was purged; "
                "try again in a minute"
            ) from None
        raise
    return PurgeResult(queue.url, before)
