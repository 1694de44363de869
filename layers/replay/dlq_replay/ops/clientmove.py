"""The client-side move of `redrive`: workers each receive a batch, send the copies (a
serverless kind's records through a `Deliverer`) and delete exactly the originals whose copy
was sent. What they share changes under one lock, and no SQS call is made under it. A stop
gives back what is not sent yet; the tally counts only what SQS confirmed.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Literal, TypeVar

from dlq_replay.core.messages import OutboundMessage
from dlq_replay.ops.companion import Companion, companion_fits
from dlq_replay.ops.movefollow import MoveFollower
from dlq_replay.ops.pacing import make_pace
from dlq_replay.ops.receivememory import ReceiveMemory
from dlq_replay.ops.receiving import ReceiveBudget, Sighting, receive, release, usable_budget
from dlq_replay.ops.redrive import (
    BudgetStop,
    FailReason,
    Leftover,
    RedriveRequest,
    RedriveTally,
    SkipReason,
    Stop,
    deliveries_sent,
    plan_copy,
)
from dlq_replay.sqs.depth import queue_depth
from dlq_replay.sqs.sending import BatchSender, SendFailure, delete_messages
from dlq_replay.targets.delivery import Delivery

# What a batch sends: copies to SQS queues, or deliveries to the targets of serverless records.
Copy = TypeVar("Copy", OutboundMessage, Delivery)

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

    from dlq_replay.targets.deliverer import Deliverer

# Between two looks while messages are only in flight elsewhere (or receives do not wait):
# from the first, doubling to the last.
FIRST_PAUSE_SECONDS = 0.05
LAST_PAUSE_SECONDS = 1.0


def redrive(
    sqs: SQSClient,
    request: RedriveRequest,
    *,
    on_progress: Callable[[RedriveTally], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] | None = None,
    stop: threading.Event | None = None,
    deliverer: Deliverer | None = None,
) -> RedriveTally:
    """Move messages client-side, `request.concurrency` batches at a time, to the end."""
    return ClientMove(sqs, request, clock=clock, sleep=sleep, stop=stop, deliverer=deliverer).run(
        on_progress
    )


class MoverEnd:
    """One worker's end-of-source rule: an empty short poll asks only some of SQS's servers, so
    the counters decide; until they say empty, receive again (a long poll while messages are
    visible or delayed, after a growing pause while they are only in flight elsewhere)."""

    def __init__(self, move: ClientMove) -> None:
        self._move = move
        self.wait_seconds = 0  # of the next receive
        self._pause = FIRST_PAUSE_SECONDS

    def flowing(self) -> None:
        """A receive brought messages: short polls again."""
        self.wait_seconds = 0
        self._pause = FIRST_PAUSE_SECONDS

    def done(self) -> bool:
        """After an empty receive: whether the source is empty but for what the run holds (the
        least it can have held while the counters were read, as other movers delete meanwhile)."""
        move = self._move
        held, dropped = move.held()
        depth = queue_depth(move.sqs, move.request.source.url)
        least = held - (move.held()[1] - dropped)
        if depth.visible + depth.delayed + max(0, depth.in_flight - least) == 0:
            return True
        if depth.visible + depth.delayed and move.request.wait_seconds:
            self.wait_seconds = move.request.wait_seconds  # SQS answers as one shows up
            return False
        # In flight elsewhere (or by this run, in a receive's answer not yet read): they can
        # only come back, so look again shortly, then less and less often.
        self.wait_seconds = 0
        move.stop.wait(self._pause)
        self._pause = min(LAST_PAUSE_SECONDS, self._pause * 2)
        return False


def combined(one: RedriveTally, other: RedriveTally) -> RedriveTally:
    """Two moves' tallies as one (a redrive's own and its second process's, `ops.companion`)."""
    counts = ("seen", "moved", "sent_not_deleted", "failed", "skipped", "given_back")
    return replace(
        one,
        **{name: getattr(one, name) + getattr(other, name) for name in counts},
        unsettled=one.unsettled + other.unsettled,
        not_released=one.not_released + other.not_released,
        failures=_summed(one.failures, other.failures),
        skips=_summed(one.skips, other.skips),
        delivered=_summed(one.delivered, other.delivered),
        errors={**other.errors, **one.errors},
        processes=one.processes + other.processes,
        stopped=one.stopped or other.stopped,
        interrupted=one.interrupted or other.interrupted,
        hidden_until=_later(one.hidden_until, other.hidden_until),
    )


def _summed(one: Mapping[str, int], other: Mapping[str, int]) -> dict[str, int]:
    return {key: one.get(key, 0) + other.get(key, 0) for key in {*one, *other}}


def left_by_both(one: Leftover, other: Leftover) -> Leftover:
    """Two moves' leftovers as one (`combined`'s)."""
    summed = ("hidden", "sent_not_deleted", "unconfirmed", "receives", "receiving_up_to")
    return Leftover(
        **{name: getattr(one, name) + getattr(other, name) for name in summed},
        deleting=one.deleting + other.deleting,
        releasing=one.releasing + other.releasing,
        hidden_until=_later(one.hidden_until, other.hidden_until),
        receiving_until=_later(one.receiving_until, other.receiving_until),
    )


def _later(one: float | None, other: float | None) -> float | None:
    return max((t for t in (one, other) if t is not None), default=None)


class ClientMove:
    """One client-side move: its workers, and the messages in hand and the counts, changed only
    under `lock`; snapshots of them go out as RedriveTally (and Leftover when abandoned)."""

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
            memory.check_move(
                request.source,
                budget,
                takes_all=request.selector.empty and request.limit is None and not request.dry_run,
                taken=frozenset() if request.dry_run else request.selector.message_ids,
            )
        self.sqs = sqs
        self.request = request
        self.budget = budget
        self.interrupt = stop or threading.Event()  # the caller's: a signal
        self.stop = threading.Event()  # ours: the interrupt, the pace, the budget, an error
        # A wait for the pace ends at once on a stop (tests give their own sleep).
        self.pace = make_pace(sqs, request.rate, request.until_failing, clock, sleep or self._sleep)
        self.deliverer = deliverer
        self.memory = memory  # what it saw of the receive counts goes there at the end
        self.follower = follower  # the move's follow record (follow/): its counts, its end
        self.companion = companion  # a second process of the move, and its counts
        self.sender = BatchSender(sqs)
        self.source_urls: dict[str, str | None] = {}
        self.sighting = Sighting()
        self.ended = False  # the workers found the source's end (no stop for the companion)
        self.lock = threading.Lock()
        self.seen: set[str] = set()
        self.in_hand: dict[str, str] = {}  # message id -> receipt handle, not deleted yet
        self.hidden_until: dict[str, float] = {}  # message id -> end of its hide time
        self.dropped = 0  # messages deleted from in_hand (MoverEnd)
        self.moved = 0
        self.sent_not_deleted = 0
        self.given_back = 0
        self.in_flight = 0  # copies whose send or whose original's delete is in flight
        self.reserved = 0  # messages asked for by receives still in flight (for --limit)
        self.receives = self.receiving_up_to = 0  # ReceiveMessage calls in flight, and asked
        self.unsettled = 0  # received, neither sent, failed, skipped nor given back yet
        self.deleting = self.releasing = 0  # messages whose delete / release is in flight
        self.failures: Counter[str] = Counter()
        self.skips: Counter[str] = Counter()
        self.delivered: Counter[str] = Counter()  # target ARN -> records delivered
        self.errors: dict[str, str] = {}  # a failure's code -> its first message
        self.stopped: Stop | None = None
        self.not_released = 0
        self.released = False

    def _sleep(self, seconds: float) -> None:
        self.stop.wait(seconds)

    def run(self, on_progress: Callable[[RedriveTally], None] | None) -> RedriveTally:
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

    def tally(self) -> RedriveTally:
        """A snapshot, the second process's counts included (call it under the lock, or once
        the run has ended)."""
        own = RedriveTally(
            seen=len(self.seen),
            moved=self.moved,
            sent_not_deleted=self.sent_not_deleted,
            failed=sum(self.failures.values()),
            skipped=sum(self.skips.values()),
            given_back=self.given_back,
            unsettled=self.unsettled,
            dry_run=self.request.dry_run,
            failures=dict(self.failures),
            skips=dict(self.skips),
            stopped=self.stopped,
            interrupted=self.interrupt.is_set(),
            not_released=self.not_released,
            hidden_until=self._hidden_until() if self.not_released else None,
            pace=self.pace.report(),
            delivered=dict(self.delivered),
            errors=dict(self.errors),
        )
        other = self.companion.tally if self.companion is not None else None
        return own if other is None else combined(own, other)

    def _hidden_until(self) -> float | None:
        return max((self.hidden_until.get(m, 0.0) for m in self.in_hand), default=None)

    def leftover(self) -> Leftover:
        """What stays if the run is abandoned now (safe from any thread)."""
        return self.abandoned()[1]

    def abandoned(self) -> tuple[RedriveTally, Leftover]:
        """The tally and what stays hidden if the run is abandoned now, from one moment
        (safe from any thread)."""
        with self.lock:
            # A receive answered at the end of its long poll hides what it brings from then.
            answered_by = time.time() + self.request.wait_seconds + self.request.hide_seconds
            left = Leftover(
                hidden=self.not_released if self.released else len(self.in_hand),
                hidden_until=self._hidden_until(),
                sent_not_deleted=self.sent_not_deleted,
                unconfirmed=self.in_flight,
                receives=self.receives,
                receiving_up_to=self.receiving_up_to,
                receiving_until=answered_by if self.receives else None,
                deleting=self.deleting,
                releasing=self.releasing,
            )
            other = self.companion.leftover if self.companion is not None else None
            return self.tally(), left if other is None else left_by_both(left, other)

    def held(self) -> tuple[int, int]:
        """The messages in hand, and how many it has deleted from them so far."""
        with self.lock:
            return len(self.in_hand), self.dropped
