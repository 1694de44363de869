"""The client-side move of `redrive`: workers each receive a batch, send the copies (a
serverless kind's records through a `Deliverer`) and delete exactly the originals whose copy
was sent. What they share changes under one lock, and no SQS call is made under it. A stop
gives back what is not sent yet; the tally counts only what SQS confirmed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Literal, TypeVar

from dlq_replay.core.messages import OutboundMessage
from dlq_replay.ops.companion import Companion, companion_fits
from dlq_replay.ops.movefollow import MoveFollower
from dlq_replay.ops.movestate import MoverEnd, MoveState
from dlq_replay.ops.pacing import make_pace
from dlq_replay.ops.receivememory import ReceiveMemory
from dlq_replay.ops.receiving import ReceiveBudget, Sighting, receive, release, usable_budget
from dlq_replay.ops.redrive import (
    BudgetStop,
    FailReason,
    RedriveRequest,
    RedriveTally,
    SkipReason,
    deliveries_sent,
    plan_copy,
)
from dlq_replay.sqs.sending import BatchSender, SendFailure, delete_messages
from dlq_replay.targets.delivery import Delivery

# What a batch sends: copies to SQS queues, or deliveries to the targets of serverless records.
Copy = TypeVar("Copy", OutboundMessage, Delivery)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

    from dlq_replay.targets.deliverer import Deliverer


class ClientMove(MoveState):
    """One client-side move's workers (its state and snapshots are `MoveState`'s)."""

    def __init__(
        self,
        sqs: SQSClient,
        request: RedriveRequest,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] | None = None,
        stop: threading.Event | None = None,
        deliverer: Deliverer | None = None,
        memory: ReceiveMemory | None = None,
        follower: MoveFollower | None = None,
        companion: Companion | None = None,
        budget: ReceiveBudget | Literal["read"] | None = "read",
    ) -> None:
        """The move, checked (the receive budget, and what `memory` holds) but not started.
        `budget`: read from the queues, or already read (the second process gets its parent's)."""
        if companion is not None and not companion_fits(request):
            raise ValueError("a second process only moves everything, unpaced, to SQS queues")
        if request.target_arns and deliverer is None and not request.dry_run:
            raise ValueError("a redrive that delivers to targets needs a Deliverer")
        if budget == "read":
            budget = usable_budget(sqs, request.source, request.reserve)
        if memory is not None and budget is not None:
            # A move of every message it receives may spend the kept receive (the reserve kept
            # it for this); one that gives some back (a selection, a limit, a dry run) keeps the
            # reserve for those, as a read does; ids chosen by the console are taken.
            memory.check(
                request.source,
                budget,
                takes_all=request.selector.empty and request.limit is None and not request.dry_run,
                taken=frozenset() if request.dry_run else request.selector.message_ids,
            )
        self.stop = threading.Event()  # ours: the interrupt, the pace, the budget, an error
        # A wait for the pace ends at once on a stop (tests give their own sleep).
        pace = make_pace(sqs, request.rate, request.until_failing, clock, sleep or self.stop.wait)
        super().__init__(sqs, request, stop or threading.Event(), pace, companion)
        self.budget = budget
        self.deliverer = deliverer
        self.memory = memory  # what it saw of the receive counts goes there at the end
        self.follower = follower  # the move's follow record (follow/): its counts, its end
        self.sender = BatchSender(sqs)
        self.source_urls: dict[str, str | None] = {}
        self.sighting = Sighting()
        self.ended = False  # the workers found the source's end (no stop for the companion)

    def run(self, on_progress: Callable[[RedriveTally], None] | None = None) -> RedriveTally:
        """Move messages, `request.concurrency` batches at a time, to the end."""
        workers = max(1, self.request.concurrency)
        if self.follower is not None:
            self.follower.start()
        if self.companion is not None:
            self.companion.follower = self.follower
            self.companion.begin(self.request, self.budget)
        watcher = threading.Thread(target=self._watch, name="redrive-stop", daemon=True)
        watcher.start()
        try:
            if workers == 1:
                self._work(on_progress)
            else:
                with ThreadPoolExecutor(workers, thread_name_prefix="redrive") as pool:
                    futures = [pool.submit(self._work, on_progress) for _ in range(workers)]
                    try:
                        for future in futures:
                            future.result()
                    except BaseException:
                        self.stop.set()  # a worker's error: the others finish their batch
                        raise
            # Every worker returned: the source's end, unless something stopped the move.
            self.ended = not self.stop.is_set()
        finally:
            self.stop.set()
            if self.companion is not None and not self.ended:
                self.companion.stop()
            with self.lock:
                handles = list(self.in_hand.values())
                self.releasing = len(handles)
            refused = release(self.sqs, self.request.source.url, handles)
            with self.lock:
                self.not_released = refused
                self.released = True
                self.releasing = 0
                # Moved: the originals it deleted (every message seen but not in its hands).
                self.sighting.removed.update(m for m in self.seen if m not in self.in_hand)
            if self.companion is not None:
                self.companion.join()  # its counts are the move's: it ends before the report
                self.sighting.add(self.companion.sighting)
                self.source_urls.update(self.companion.source_urls)
            if self.memory is not None:
                self.memory.record(self.request.source, self.sighting)
            if self.follower is not None:
                self.follower.finish(self.source_urls.values())
        with self.lock:
            return self.tally()

    def _watch(self) -> None:
        """The caller's stop token stops the workers too (ours: also the pace, budget, errors),
        and the second process as soon as the move stops before its end."""
        while not self.stop.is_set():
            if self.interrupt.wait(0.2):
                self.stop.set()
        if self.companion is not None and not self.ended:
            self.companion.stop()

    def _work(self, on_progress: Callable[[RedriveTally], None] | None) -> None:
        end = MoverEnd(self)
        try:
            while not self.stop.is_set():
                with self.lock:
                    want = self._wanted()
                    if want <= 0:
                        return
                    self.reserved += want
                try:
                    fresh, received = self._receive(want, end.wait_seconds)
                    if fresh:
                        self._handle(fresh)
                finally:
                    with self.lock:
                        self.reserved -= want
                if not received:
                    if end.done():  # the source is empty
                        return
                    continue
                if not fresh:
                    return
                end.flowing()
                with self.lock:
                    if self._budget_spent(fresh):
                        self.stop.set()
                    snapshot = self.tally()
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
        handled = self.moved + self.sent_not_deleted + sum(self.failures.values())
        return min(batch_size, self.request.limit - handled - self.reserved)

    def _receive(self, want: int, wait_seconds: int) -> tuple[list[MessageTypeDef], int]:
        request = self.request
        with self.lock:
            self.receives += 1
            self.receiving_up_to += want
        batch: list[MessageTypeDef] = []
        fresh: list[MessageTypeDef] = []
        try:
            batch = receive(
                self.sqs,
                request.source.url,
                want,
                visibility_timeout=request.hide_seconds,
                wait_seconds=wait_seconds,
            )
        finally:
            hidden_until = time.time() + request.hide_seconds
            with self.lock:
                # In the same moment the receive stops counting as in flight: no gap, no overlap.
                self.receives -= 1
                self.receiving_up_to -= want
                if self.budget is not None:
                    self.sighting.saw(batch, self.budget)
                for message in batch:
                    # A message seen before came back after its hide time: keep its new handle.
                    self.in_hand[message["MessageId"]] = message["ReceiptHandle"]
                    self.hidden_until[message["MessageId"]] = hidden_until
                    if message["MessageId"] not in self.seen:
                        self.seen.add(message["MessageId"])
                        fresh.append(message)
                self.unsettled += len(fresh)
        return fresh, len(batch)

    def _handle(self, fresh: Sequence[MessageTypeDef]) -> None:
        if self.stop.is_set():
            self._give_back(len(fresh))
            return
        # Planned outside the lock: a copy to each source queue may look its URL up (SQS);
        # the shared cache only ever gains entries, and two threads looking up one is harmless.
        planned = [
            (message, plan_copy(self.sqs, message, self.request, self.source_urls))
            for message in fresh
        ]
        copies: list[tuple[MessageTypeDef, OutboundMessage]] = []
        deliveries: list[tuple[MessageTypeDef, Delivery]] = []
        with self.lock:
            for message, outcome in planned:
                if isinstance(outcome, SkipReason):
                    self.skips[outcome] += 1
                elif isinstance(outcome, FailReason):
                    self.failures[outcome] += 1
                elif self.request.dry_run:
                    self.moved += 1
                    if isinstance(outcome, Delivery):
                        self.delivered[outcome.target_arn] += 1
                elif isinstance(outcome, Delivery):
                    deliveries.append((message, outcome))
                else:
                    copies.append((message, outcome))
            self.unsettled -= len(planned) - len(copies) - len(deliveries)
        if copies:
            self._move(copies, self.sender.send)
        if deliveries and self.deliverer is not None:
            self._move(deliveries, partial(deliveries_sent, self.deliverer))

    def _give_back(self, count: int) -> None:
        """Received, not sent: counted as given back (released with the rest at the end)."""
        with self.lock:
            self.given_back += count
            self.unsettled -= count

    def _move(
        self,
        copies: Sequence[tuple[MessageTypeDef, Copy]],
        send: Callable[[list[Copy]], Mapping[str, SendFailure]],
    ) -> None:
        """Send (or deliver) the copies, then delete exactly the originals of those confirmed."""
        if not self._wait_for_slot(len(copies)):
            self._give_back(len(copies))
            return
        with self.lock:
            self.in_flight += len(copies)
        try:
            failed = send([copy for _, copy in copies])
        finally:
            with self.lock:
                self.in_flight -= len(copies)
        sent = [message for message, _ in copies if message["MessageId"] not in failed]
        if self.follower is not None:
            self.follower.count(copy for m, copy in copies if m["MessageId"] not in failed)
        with self.lock:
            self._count_failures(failed.values())
            self.unsettled -= len(copies)
            for message, copy in copies:
                if isinstance(copy, Delivery) and message["MessageId"] not in failed:
                    self.delivered[copy.target_arn] += 1
            if self.request.keep:
                # Copy mode: the originals stay in hand and are made visible again at the end.
                self.moved += len(sent)
                return
            # Sent, original not deleted yet: counted so until the delete is confirmed.
            self.sent_not_deleted += len(sent)
            self.deleting += len(sent)
        try:
            not_deleted = set(delete_messages(self.sqs, self.request.source.url, sent))
        finally:
            with self.lock:
                self.deleting -= len(sent)
        self.pace.deleted(self.request.source.url, len(sent) - len(not_deleted))
        with self.lock:
            for message in sent:
                if message["MessageId"] not in not_deleted:
                    self.sent_not_deleted -= 1
                    self.moved += 1
                    self.dropped += self.in_hand.pop(message["MessageId"], None) is not None

    def _wait_for_slot(self, count: int) -> bool:
        """Wait for the pace's slot for `count` copies; False when the run must stop."""
        if self.pace.acquire(count) and not self.stop.is_set():
            return True
        with self.lock:
            self.stopped = self.stopped or self.pace.stopped
        self.stop.set()
        return False

    def _count_failures(self, failures: Iterable[SendFailure]) -> None:
        for failure in failures:
            code = failure.code or "send-failed"
            self.failures[code] += 1
            self.errors.setdefault(code, failure.message)

    def _budget_spent(self, fresh: Sequence[MessageTypeDef]) -> bool:
        budget = self.budget
        if budget is None:
            return False
        kept = [m for m in fresh if m["MessageId"] in self.in_hand]
        if budget.spent_by(kept):
            self.stopped = BudgetStop(self.request.source.name, budget.reserve, budget.target_name)
            return True
        return False
