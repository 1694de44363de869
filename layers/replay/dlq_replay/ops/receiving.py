"""Receiving without harm: every ReceiveMessage raises a message's receive count, and on a
queue with a RedrivePolicy that count decides when SQS moves the message on, so a look
spends a budget (`ReceiveBudget`) and stops before it is gone."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from dlq_replay.ops.errors import OpsError
from dlq_replay.ops.queues import QueueInfo, queue_info
from dlq_replay.sqs.sending import MAX_BATCH_ENTRIES, change_visibility
from dlq_replay.sqs.sources import dead_letter_sources

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef


# -- the receive budget -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReceiveBudget:
    """The receive-count rule for looking at a queue with a RedrivePolicy.

    SQS moves a message on the receive that would take its receive count past
    `max_receive_count`, and shows a count only by receiving the message. A message arrives on
    a DLQ with the count it had on its source queue (`arrival_count`, the largest
    maxReceiveCount among the source queues), so a fresh one has
    `max_receive_count - arrival_count - 1` receives left after one look. The tools
    * refuse to start when even a fresh message would keep fewer than `reserve` receives,
    * stop before their next receive once a message they saw keeps `reserve` or fewer,
    * and never receive a message in flight (one the replay is holding for a long delay).
    """

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


def receive_budget(sqs: SQSClient, queue: QueueInfo, reserve: int = 1) -> ReceiveBudget | None:
    """The budget of a queue with a RedrivePolicy; None when receives cannot move messages."""
    if queue.redrive is None:
        return None
    arrival = 0
    for source_url in dead_letter_sources(sqs, queue.url):
        source = queue_info(sqs, source_url)
        if source.redrive is not None:
            arrival = max(arrival, source.redrive.max_receive_count)
    return ReceiveBudget(
        queue.redrive.max_receive_count, arrival, reserve, queue.redrive.target_name
    )


def budget_refusal(budget: ReceiveBudget, queue: QueueInfo) -> str:
    return (
        f"{queue.name}: maxReceiveCount {budget.max_receive_count} leaves no receive to spare "
        f"(a message arrives with {budget.arrival_count} receives, one look leaves "
        f"{budget.fresh_left}, the reserve is {budget.reserve}); receiving could move messages "
        f"to {budget.target_name}"
    )


def usable_budget(sqs: SQSClient, queue: QueueInfo, reserve: int = 1) -> ReceiveBudget | None:
    """`receive_budget`, refused with OpsError when even a fresh message would keep too few."""
    budget = receive_budget(sqs, queue, reserve)
    if budget is not None and budget.exhausted:
        raise OpsError(budget_refusal(budget, queue))
    return budget


# -- receiving ----------------------------------------------------------------------------------


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
    """Make received messages visible again at once; returns how many SQS refused.

    A refusal loses nothing: such a message comes back when its visibility timeout ends.
    """
    return len(change_visibility(sqs, url, [(handle, 0) for handle in receipt_handles]))


def receive_count_of(message: MessageTypeDef) -> int:
    return int(message.get("Attributes", {}).get("ApproximateReceiveCount", "1"))


def budget_stop(budget: ReceiveBudget) -> str:
    return (
        f"stopped: a message has {budget.reserve} or fewer receives left before SQS moves it "
        f"to {budget.target_name}"
    )


@dataclass(slots=True)
class Receiving:
    """One command's receives on one queue (peek, export): every message is received once.

    Messages stay hidden for `hide_seconds` while the command runs, so none comes back and is
    received twice, and are made visible again by `release` (whatever the command has not
    deleted), also when it is interrupted. On a queue with a budget the first receive takes a
    single message, and the run stops before its next receive once a message is spent.
    """

    sqs: SQSClient
    url: str
    budget: ReceiveBudget | None
    hide_seconds: int = 30
    wait_seconds: int = 1
    handles: dict[str, str] = field(default_factory=dict)  # message id -> latest handle
    stopped: str | None = None
    stop: threading.Event | None = None  # a stop token: no receive once it is set
    hidden_until: float | None = None  # epoch seconds: the latest receive's hide time ends
    # In flight, for what an abandoned run leaves hidden: the messages a receive asked for,
    # and those a release is making visible (no longer in `handles`, maybe still hidden).
    receiving_up_to: int = 0
    releasing: int = 0

    def batches(
        self, limit: int | None, select: Callable[[MessageTypeDef], bool]
    ) -> Iterator[list[MessageTypeDef]]:
        """The selected messages of each receive, at most `limit` in all (None: no limit),
        until a receive brings nothing new or the budget stops it."""
        taken = 0
        while (limit is None or taken < limit) and not (self.stop and self.stop.is_set()):
            want = MAX_BATCH_ENTRIES if limit is None else limit - taken
            if self.budget is not None and not self.handles:
                want = 1
            self.receiving_up_to = want
            try:
                batch = receive(
                    self.sqs,
                    self.url,
                    want,
                    visibility_timeout=self.hide_seconds,
                    wait_seconds=self.wait_seconds,
                )
            except BaseException:
                self.receiving_up_to = 0
                raise
            if batch:
                self.hidden_until = time.time() + self.hide_seconds
            fresh = [m for m in batch if m["MessageId"] not in self.handles]
            for message in batch:
                self.handles[message["MessageId"]] = message["ReceiptHandle"]
            self.receiving_up_to = 0  # only now: in hand, so never missed by `leftover`
            chosen = [m for m in fresh if select(m)]
            taken += len(chosen)
            if chosen:
                yield chosen
            if not fresh:
                return
            if self.budget is not None and self.budget.spent_by(fresh):
                self.stopped = budget_stop(self.budget)
                return

    def forget(self, message_ids: Iterable[str]) -> None:
        """Messages deleted: nothing to release."""
        for message_id in message_ids:
            self.handles.pop(message_id, None)

    def release(self, message_ids: Iterable[str] | None = None) -> int:
        """Make these messages (None: every one still in hand) visible again at once; returns
        how many SQS refused (they come back when `hide_seconds` ends)."""
        chosen = list(self.handles) if message_ids is None else list(message_ids)
        self.releasing = len([m for m in chosen if m in self.handles])
        handles = [self.handles.pop(m) for m in chosen if m in self.handles]
        try:
            return release(self.sqs, self.url, handles)
        finally:
            self.releasing = 0
