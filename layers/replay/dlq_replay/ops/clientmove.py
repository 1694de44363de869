"""The client-side move of `redrive`: batches of up to 10 received, copied, sent and deleted,
several batches in flight at once.

Each worker thread loops: receive a batch, send the copies (one SendMessageBatch per
destination), delete exactly the originals whose copy was sent. What the workers share (the
messages seen, the handles still held, the counts, the rate and the receive budget) changes
under one lock; the SQS calls run outside it, so the round trips overlap. boto3 clients may be
shared between threads.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from dlq_replay.core.messages import OutboundMessage
from dlq_replay.ops.ending import Held, SourceEnd
from dlq_replay.ops.pacing import make_pace
from dlq_replay.ops.receiving import ReceiveBudget, receive, release, usable_budget
from dlq_replay.ops.redrive import (
    FailReason,
    RedriveRequest,
    RedriveTally,
    SkipReason,
    plan_copy,
)
from dlq_replay.sqs.sending import (
    BatchSender,
    SendFailure,
    delete_messages,
)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef


def redrive(
    sqs: SQSClient,
    request: RedriveRequest,
    *,
    on_progress: Callable[[RedriveTally], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> RedriveTally:
    """Move messages client-side, in batches of up to 10, `request.concurrency` at a time.

    For each batch: send the copies with one SendMessageBatch per destination, then delete
    exactly the originals whose copy was sent. Messages not moved (skipped, failed, or all of
    them in a dry run) stay hidden until the run ends, so no message is looked at twice, and
    are then made visible at once, also when the run is interrupted. A crash between a send
    and its delete leaves the original in place: a rerun sends it again (a duplicate on a
    standard queue; on FIFO the same deduplication id within SQS's 5-minute window).
    """
    budget = usable_budget(sqs, request.source, request.reserve)
    return ClientMove(sqs, request, budget, clock, sleep).run(on_progress)


class ClientMove:
    """The state of one client-side move; snapshots of it go out as RedriveTally."""

    def __init__(
        self,
        sqs: SQSClient,
        request: RedriveRequest,
        budget: ReceiveBudget | None,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
    ) -> None:
        self.sqs = sqs
        self.request = request
        self.budget = budget
        self.sender = BatchSender(sqs)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.seen: set[str] = set()
        self.in_hand: dict[str, str] = {}  # message id -> receipt handle, not deleted yet
        self.taken = self.dropped = 0  # messages received, and deleted from in_hand (SourceEnd)
        self.moved = 0
        self.reserved = 0  # messages asked for by receives still in flight (for --limit)
        self.failures: Counter[str] = Counter()
        self.skips: Counter[str] = Counter()
        self.stopped: str | None = None
        self.not_released = 0
        self.source_urls: dict[str, str | None] = {}
        self.pace = make_pace(sqs, request.rate, request.until_failing, clock, sleep)
        self.end = SourceEnd(sqs, request.source.url, request.wait_seconds, self.stop, self.held)

    def tally(self) -> RedriveTally:
        return RedriveTally(
            seen=len(self.seen),
            moved=self.moved,
            failed=sum(self.failures.values()),
            skipped=sum(self.skips.values()),
            dry_run=self.request.dry_run,
            failures=dict(self.failures),
            skips=dict(self.skips),
            stopped=self.stopped,
            not_released=self.not_released,
            pace=self.pace.report(),
        )

    def run(self, on_progress: Callable[[RedriveTally], None] | None) -> RedriveTally:
        workers = max(1, self.request.concurrency)
        try:
            if workers == 1:
                self._work(on_progress)
            else:
                with ThreadPoolExecutor(workers, thread_name_prefix="redrive") as pool:
                    futures = [pool.submit(self._work, on_progress) for _ in range(workers)]
                    try:
                        for future in futures:
                            future.result()
                    finally:
                        # Ctrl-C or a worker's error: the others finish their batch and stop.
                        self.stop.set()
        finally:
            self.not_released = release(self.sqs, self.request.source.url, self.in_hand.values())
        return self.tally()

    def _work(self, on_progress: Callable[[RedriveTally], None] | None) -> None:
        end = self.end.mover()
        try:
            while not self.stop.is_set():
                with self.lock:
                    want = self._wanted()
                    self.reserved += want
                if want <= 0:
                    return
                try:
                    fresh, received = self._receive(want, end.wait_seconds)
                    if fresh:
                        self._handle(fresh)
                finally:
                    with self.lock:
                        self.reserved -= want
                if not received:
                    if end.done():  # the source is empty (ops.ending)
                        return
                    continue
                if not fresh:
                    return
                end.flowing()
                with self.lock:
                    snapshot = self.tally()
                    if self._budget_spent(fresh):
                        self.stop.set()
                if on_progress is not None:
                    on_progress(snapshot)
        except BaseException:
            self.stop.set()
            raise

    def _wanted(self) -> int:
        """How many messages the next receive asks for (0: the limit is reached)."""
        batch_size = self.pace.batch_size
        if self.request.limit is None:
            return batch_size
        handled = self.moved + sum(self.failures.values())
        return min(batch_size, self.request.limit - handled - self.reserved)

    def held(self) -> Held:
        with self.lock:
            return Held(len(self.in_hand), self.taken, self.dropped)

    def _receive(self, want: int, wait_seconds: int) -> tuple[list[MessageTypeDef], int]:
        request = self.request
        batch = receive(
            self.sqs,
            request.source.url,
            want,
            visibility_timeout=request.hide_seconds,
            wait_seconds=wait_seconds,
        )
        fresh: list[MessageTypeDef] = []
        with self.lock:
            self.taken += len(batch)
            for message in batch:
                # A message seen before came back after its hide time: keep its new handle.
                self.in_hand[message["MessageId"]] = message["ReceiptHandle"]
                if message["MessageId"] not in self.seen:
                    self.seen.add(message["MessageId"])
                    fresh.append(message)
        return fresh, len(batch)

    def _handle(self, fresh: Sequence[MessageTypeDef]) -> None:
        copies: list[tuple[MessageTypeDef, OutboundMessage]] = []
        for message in fresh:
            with self.lock:  # the source-queue cache is shared
                outcome = plan_copy(self.sqs, message, self.request, self.source_urls)
                if isinstance(outcome, SkipReason):
                    self.skips[outcome] += 1
                elif isinstance(outcome, FailReason):
                    self.failures[outcome] += 1
                elif self.request.dry_run:
                    self.moved += 1
                else:
                    copies.append((message, outcome))
        if copies:
            self._move(copies)

    def _move(self, copies: Sequence[tuple[MessageTypeDef, OutboundMessage]]) -> None:
        if not self._wait_for_slot(len(copies)):
            # Stopped: not sent, so not counted as seen; given back with the rest at the end.
            with self.lock:
                self.seen.difference_update(message["MessageId"] for message, _ in copies)
            return
        failed = self.sender.send([copy for _, copy in copies])
        sent = [message for message, _ in copies if message["MessageId"] not in failed]
        if self.request.keep:
            # Copy mode: the originals stay in hand and are made visible again at the end.
            with self.lock:
                self._count_failures(failed.values())
                self.moved += len(sent)
            return
        not_deleted = set(delete_messages(self.sqs, self.request.source.url, sent))
        self.pace.deleted(self.request.source.url, len(sent) - len(not_deleted))
        with self.lock:
            self._count_failures(failed.values())
            for message in sent:
                if message["MessageId"] in not_deleted:
                    self.failures[FailReason.DELETE] += 1
                else:
                    self.moved += 1
                    self.dropped += self.in_hand.pop(message["MessageId"], None) is not None

    def _wait_for_slot(self, count: int) -> bool:
        """Wait for the pace's slot for `count` copies; False when the pace stopped the run."""
        if self.pace.acquire(count):
            return True
        with self.lock:
            self.stopped = self.stopped or self.pace.stopped
        self.stop.set()
        return False

    def _count_failures(self, failures: Iterable[SendFailure]) -> None:
        for failure in failures:
            self.failures[failure.code or "send-failed"] += 1

    def _budget_spent(self, fresh: Sequence[MessageTypeDef]) -> bool:
        budget = self.budget
        if budget is None:
            return False
        kept = [m for m in fresh if m["MessageId"] in self.in_hand]
        if budget.spent_by(kept):
            self.stopped = (
                f"stopped: a message left in {self.request.source.name} has {budget.reserve} "
                f"or fewer receives before SQS moves it to {budget.target_name}"
            )
            return True
        return False
