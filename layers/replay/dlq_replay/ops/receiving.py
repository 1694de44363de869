"""Receiving without harm: a look spends the receive budget (`ReceiveBudget`) and stops before
it is gone; and what a received record is (`recognised`)."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from dlq_replay.core.kinds import Recognised, RecordKind
from dlq_replay.core.messages import InboundMessage
from dlq_replay.engine.kinds import recognise
from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.queueinfo import QueueInfo, queue_info
from dlq_replay.sqs.sending import MAX_BATCH_ENTRIES, change_visibility, delete_messages
from dlq_replay.sqs.sources import dead_letter_sources

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

# Receives (and releases) in flight at once on a long read (the client's pool has 10
# connections). A read goes one receive at a time until it holds SEQUENTIAL_UP_TO messages (a
# small queue gains little, and its order stays that of one reader).
RECEIVERS = 8
SEQUENTIAL_UP_TO = 500
# A read stops once this share of its hide time is gone: what it hid first would show again.
HIDE_MARGIN = 0.8
_Item = TypeVar("_Item")
# Every kind: what the operator tools read when no DLQ_KIND is given them.
ALL_KINDS = frozenset(RecordKind)


@dataclass(frozen=True, slots=True)
class ReceiveBudget:
    """SQS moves a message on the receive that would take its count past `max_receive_count`,
    and shows a count only by receiving; a message arrives on a DLQ with the count it had on its
    source queue (`arrival_count`, the largest maxReceiveCount among them)."""

    max_receive_count: int
    arrival_count: int = 0
    reserve: int = 1
    target_name: str = ""

    @property
    def fresh_left(self) -> int:
        """Receives a message fresh on this queue keeps after one more receive."""
        return self.max_receive_count - self.arrival_count - 1

    @property
    def exhausted(self) -> bool:
        return self.fresh_left < self.reserve

    def left(self, receive_count: int) -> int:
        """Receives still delivering the message, given its count after the latest receive."""
        return max(0, self.max_receive_count - receive_count)

    def stop_after(self, receive_count: int) -> bool:
        return self.left(receive_count) <= self.reserve

    def spent_by(self, received: Iterable[MessageTypeDef]) -> bool:
        """Whether a message just received keeps `reserve` or fewer receives: stop receiving."""
        return any(self.stop_after(receive_count_of(message)) for message in received)


def usable_budget(sqs: SQSClient, queue: QueueInfo, reserve: int = 1) -> ReceiveBudget | None:
    """The budget of a queue with a RedrivePolicy (None when receives cannot move messages),
    refused with OpsError when even a fresh message would keep too few."""
    if queue.redrive is None:
        return None
    arrival = 0
    for source_url in dead_letter_sources(sqs, queue.url):
        source = queue_info(sqs, source_url)
        if source.redrive is not None:
            arrival = max(arrival, source.redrive.max_receive_count)
    budget = ReceiveBudget(
        queue.redrive.max_receive_count, arrival, reserve, queue.redrive.target_name
    )
    if budget.exhausted:
        raise OpsError(
            f"{queue.name}: maxReceiveCount {budget.max_receive_count} leaves no receive to "
            f"spare (a message arrives with {arrival} receives, one look leaves "
            f"{budget.fresh_left}, the reserve is {reserve}); receiving could move messages "
            f"to {budget.target_name}"
        )
    return budget


def receive(
    sqs: SQSClient, url: str, count: int, *, visibility_timeout: int, wait_seconds: int
) -> list[MessageTypeDef]:
    return sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=max(1, min(MAX_BATCH_ENTRIES, count)),
        VisibilityTimeout=visibility_timeout,
        WaitTimeSeconds=wait_seconds,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
    ).get("Messages", [])


def release(sqs: SQSClient, url: str, receipt_handles: Iterable[str]) -> int:
    """Make received messages visible again at once, `RECEIVERS` requests at once; returns how
    many SQS refused (they come back when their visibility timeout ends)."""
    changes = [(handle, 0) for handle in receipt_handles]
    return sum(in_parallel(changes, lambda chunk: len(change_visibility(sqs, url, chunk))))


def in_parallel(items: Sequence[_Item], work: Callable[[list[_Item]], int]) -> list[int]:
    """`work` of each 10 `items`, up to `RECEIVERS` at once (the boto3 client is thread-safe)."""
    step = MAX_BATCH_ENTRIES
    chunks = [list(items[i : i + step]) for i in range(0, len(items), step)]
    if len(items) <= SEQUENTIAL_UP_TO:
        return [work(chunk) for chunk in chunks]
    with ThreadPoolExecutor(min(RECEIVERS, len(chunks)), thread_name_prefix="batch") as pool:
        return list(pool.map(work, chunks))


def receive_count_of(message: MessageTypeDef) -> int:
    return int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))


def recognised(
    message: MessageTypeDef,
    replay_targets: frozenset[str],
    accepted: frozenset[RecordKind] = ALL_KINDS,
) -> Recognised:
    """A received record's kind, target and error, as the replay reads it (`engine.kinds`);
    `replay_targets` name the function a `lambda` record goes back to (the record does not)."""
    return recognise(InboundMessage.from_boto3(message), replay_targets, accepted)


INTERRUPTED = "stopped before the end of the queue"


@dataclass(slots=True)
class Sighting:
    """The receive counts one run saw on a queue with a budget (for `receivememory`): each id
    near its limit with its count, of the others only the counts; and the ids it deleted."""

    near: dict[str, int] = field(default_factory=dict)
    counts: dict[int, str] = field(default_factory=dict)  # count -> one message id with it
    removed: set[str] = field(default_factory=set)

    def saw(self, messages: Iterable[MessageTypeDef], budget: ReceiveBudget) -> None:
        for message in messages:
            count, message_id = receive_count_of(message), message["MessageId"]
            if budget.left(count) <= budget.reserve + 1 or message_id in self.near:
                self.near[message_id] = max(count, self.near.get(message_id, 0))
            else:
                self.counts.setdefault(count, message_id)

    def add(self, other: Sighting) -> None:
        """What another process of the same move saw (`ops.companion`)."""
        for message_id, count in other.near.items():
            self.near[message_id] = max(count, self.near.get(message_id, 0))
        for count, message_id in other.counts.items():
            self.counts.setdefault(count, message_id)
        self.removed |= other.removed


@dataclass(slots=True)
class Receiving:
    """One command's receives on one queue, each message kept hidden until `release`; with a
    budget the first receive takes one message (a sample). It stops, as partial, when a message
    it holds shows again, and before its hide time runs out."""

    sqs: SQSClient
    url: str
    budget: ReceiveBudget | None
    hide_seconds: int = 30
    wait_seconds: int = 1
    handles: dict[str, str] = field(default_factory=dict)  # message id -> latest handle
    stopped: str | None = None  # why the read ended before the queue did (not a stop token)
    stop: threading.Event | None = None  # a stop token: no receive once it is set
    hidden_until: float | None = None  # epoch seconds: the latest receive's hide time ends
    # In flight, for what an abandoned run leaves hidden: the receives and the messages they
    # asked for, and those a release is making visible (no longer in `handles`, maybe hidden).
    receiving_up_to: int = 0
    receives: int = 0
    releasing: int = 0
    receivers: int = RECEIVERS
    sequential_up_to: int = SEQUENTIAL_UP_TO  # one receive at a time until it holds as many
    complete: bool = False  # the read reached the queue's end (an empty receive) or its limit
    sighting: Sighting = field(default_factory=Sighting)
    clock: Callable[[], float] = time.monotonic
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _ended: bool = False
    _started: float | None = None
    _taken: int = 0  # selected messages
    _reserved: int = 0  # asked for by receives in flight (for a limit)

    @property
    def partial(self) -> str | None:
        """Why the read did not see the whole queue (one line); None when it did."""
        return self.stopped or (None if self.complete else INTERRUPTED)

    def batches(
        self, limit: int | None, select: Callable[[MessageTypeDef], bool]
    ) -> Iterator[list[MessageTypeDef]]:
        """The selected messages of each receive, at most `limit` in all (None: no limit),
        until a receive brings nothing or the run stops. `select` is called under a lock."""
        most = 1 if self.budget is not None else MAX_BATCH_ENTRIES  # a sample first
        while len(self.handles) < self.sequential_up_to:
            chosen = self._step(limit, select, most)
            if chosen is None:
                return
            if chosen:
                yield chosen
            most = MAX_BATCH_ENTRIES
        if self._ended:
            return
        found: queue.SimpleQueue[list[MessageTypeDef] | BaseException | None] = queue.SimpleQueue()
        workers = [
            threading.Thread(target=self._work, args=(limit, select, found), name="receive")
            for _ in range(max(1, self.receivers))
        ]
        for worker in workers:
            worker.start()
        failure: BaseException | None = None
        try:
            running = len(workers)
            while running:
                item = found.get()
                if item is None:
                    running -= 1
                elif isinstance(item, BaseException):
                    failure = failure or item
                elif item:
                    yield item
        finally:
            with self._lock:
                self._ended = True
            for worker in workers:
                worker.join()
        if failure is not None:
            raise failure

    def _work(
        self,
        limit: int | None,
        select: Callable[[MessageTypeDef], bool],
        found: queue.SimpleQueue[list[MessageTypeDef] | BaseException | None],
    ) -> None:
        try:
            while (chosen := self._step(limit, select)) is not None:
                found.put(chosen)
        except BaseException as error:  # handed to the reader, which raises it
            with self._lock:
                self._ended = True
            found.put(error)
        finally:
            found.put(None)

    def _step(
        self,
        limit: int | None,
        select: Callable[[MessageTypeDef], bool],
        most: int = MAX_BATCH_ENTRIES,
    ) -> list[MessageTypeDef] | None:
        """One receive: the selected new messages; None once the read has ended."""
        with self._lock:
            want = min(most, MAX_BATCH_ENTRIES)
            if limit is not None:
                want = min(want, limit - self._taken - self._reserved)
            if self._ended or self._stops() or want <= 0:
                return None
            self._reserved += want
            self.receiving_up_to += want
            self.receives += 1
            if self._started is None:
                self._started = self.clock()
        batch: list[MessageTypeDef] | None = None
        try:
            batch = receive(
                self.sqs,
                self.url,
                want,
                visibility_timeout=self.hide_seconds,
                wait_seconds=self.wait_seconds,
            )
        finally:
            with self._lock:
                # In hand in the same moment they stop counting as in flight: never missed.
                self._reserved -= want
                self.receiving_up_to -= want
                self.receives -= 1
                chosen = None if batch is None else self._took(batch, limit, select)
        return chosen

    def _stops(self) -> bool:
        """Whether the run must end before another receive (under the lock)."""
        if self.stop is not None and self.stop.is_set():
            self._ended = True
        elif self._started is not None:
            elapsed = self.clock() - self._started
            if elapsed >= HIDE_MARGIN * self.hide_seconds:
                self.stopped = self.stopped or (
                    f"stopped: the read took {elapsed:.0f} s, near its hide time of "
                    f"{self.hide_seconds} s (the messages it hid first would show again and "
                    "be received twice)"
                )
                self._ended = True
        return self._ended

    def _took(
        self,
        batch: list[MessageTypeDef],
        limit: int | None,
        select: Callable[[MessageTypeDef], bool],
    ) -> list[MessageTypeDef]:
        if batch:
            self.hidden_until = time.time() + self.hide_seconds
        fresh = [m for m in batch if m["MessageId"] not in self.handles]
        for message in batch:
            self.handles[message["MessageId"]] = message["ReceiptHandle"]
        if self.budget is not None:
            self.sighting.saw(batch, self.budget)
        chosen = [m for m in fresh if select(m)]
        self._taken += len(chosen)
        if not batch or (limit is not None and self._taken >= limit):
            self.complete = not self.stopped
            self._ended = True
        elif len(fresh) < len(batch):
            self.stopped = self.stopped or (
                "stopped: SQS showed again a message this read already holds (its hide time of "
                f"{self.hide_seconds} s ran out, or SQS delivered a second copy), so the rest "
                "was not read"
            )
            self._ended = True
        elif self.budget is not None and self.budget.spent_by(fresh):
            self.stopped = self.stopped or (
                f"stopped: a message has {self.budget.reserve} or fewer receives left before "
                f"SQS moves it to {self.budget.target_name}"
            )
            self._ended = True
        return chosen

    def delete(self, batch: list[MessageTypeDef]) -> list[str]:
        """Delete messages in hand; the ids SQS deleted (nothing to release of those)."""
        refused = set(delete_messages(self.sqs, self.url, batch))
        done = [m["MessageId"] for m in batch if m["MessageId"] not in refused]
        with self._lock:
            for message_id in done:
                self.handles.pop(message_id, None)
                if self.budget is not None:
                    self.sighting.removed.add(message_id)
                    self.sighting.near.pop(message_id, None)
        return done

    def release(self, message_ids: Iterable[str] | None = None) -> int:
        """Make these messages (None: every one in hand) visible again; how many SQS refused."""
        with self._lock:
            chosen = list(self.handles) if message_ids is None else list(message_ids)
            self.releasing = len([m for m in chosen if m in self.handles])
            handles = [self.handles.pop(m) for m in chosen if m in self.handles]
        try:
            return release(self.sqs, self.url, handles)
        finally:
            self.releasing = 0


def drained_batches(sqs: SQSClient, queue_url: str) -> Iterator[list[MessageTypeDef]]:
    """Empty a queue, each batch deleted before it is yielded, until a receive finds nothing; a
    message SQS does not delete is yielded all the same (it comes back)."""
    while batch := sqs.receive_message(
        QueueUrl=queue_url,
        MaxNumberOfMessages=MAX_BATCH_ENTRIES,
        WaitTimeSeconds=0,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
    ).get("Messages", []):
        delete_messages(sqs, queue_url, batch)
        yield batch


def drain(sqs: SQSClient, queue_url: str) -> list[MessageTypeDef]:
    """Receive and delete every message visible in a queue; the messages, in receive order."""
    return [message for batch in drained_batches(sqs, queue_url) for message in batch]
