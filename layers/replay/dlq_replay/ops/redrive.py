"""`redrive`: SQS's native move task where it can do the job, else a client-side move that sends
each copy and then deletes exactly the originals whose copy was sent."""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from dlq_replay.core import attributes
from dlq_replay.core.attributes import (
    FIRST_FAILURE_ATTRIBUTE,
    NOT_BEFORE_ATTRIBUTE,
    PARK_ERROR_ATTRIBUTE,
    PARK_REASON_ATTRIBUTE,
    Attribute,
)
from dlq_replay.core.decision import park_reason_of
from dlq_replay.core.messages import OutboundMessage
from dlq_replay.core.queues import QueueArn, is_fifo_url
from dlq_replay.core.settings import DEFAULT_COUNT_ATTRIBUTE
from dlq_replay.ops.queues import QueueInfo, dead_letter_sources
from dlq_replay.ops.receiving import ReceiveBudget, receive, release, usable_budget
from dlq_replay.sqs.sending import MAX_BATCH_ENTRIES, BatchSender, delete_messages

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef


# `--filter-reason none`: messages without a park reason (SQS's own safety net moved them).
NO_REASON = "none"


class MoveMode(StrEnum):
    NATIVE = "native"  # SQS's StartMessageMoveTask
    CLIENT = "client"  # receive, send copies, delete what was sent


class SkipReason(StrEnum):
    FILTERED = "filtered"  # its park reason is not one asked for
    NO_SOURCE = "no-source-queue"  # --to source, and SQS recorded no source queue


class FailReason(StrEnum):
    UNCOPYABLE = "uncopyable-attribute"  # a list-valued attribute SQS will not take on send
    MISSING_GROUP = "missing-group-id"  # a FIFO destination and no MessageGroupId
    DELETE = "delete-failed"  # the copy was sent but the original stayed (a rerun resends it)


@dataclass(frozen=True, slots=True)
class RedriveRequest:
    """What to move where, and how; the queues are already resolved."""

    source: QueueInfo
    destination: QueueInfo | None  # None: back to each message's source queue
    limit: int | None = None
    rate: float | None = None  # messages per second
    reset_count: bool = False
    keep: bool = False  # copy mode: send copies, leave the originals (made visible again)
    reasons: frozenset[str] = frozenset()  # empty: every message
    dry_run: bool = False
    count_attribute: str = DEFAULT_COUNT_ATTRIBUTE
    hide_seconds: int = 120
    wait_seconds: int = 1
    reserve: int = 1

    @property
    def rewrites(self) -> bool:
        return self.reset_count or self.keep or bool(self.reasons) or self.limit is not None


def choose_mode(
    sqs: SQSClient, request: RedriveRequest, *, client_side: bool
) -> tuple[MoveMode, str]:
    """Native move where SQS offers it, else client-side; with the reason, for the user."""
    if client_side:
        return MoveMode.CLIENT, "client-side move asked for"
    if request.rewrites:
        asked = [
            name
            for name, on in (
                ("--reset-count", request.reset_count),
                ("--keep", request.keep),
                ("--filter-reason", bool(request.reasons)),
                ("--limit", request.limit is not None),
            )
            if on
        ]
        return MoveMode.CLIENT, f"{', '.join(asked)}: only a client-side move can do that"
    if not dead_letter_sources(sqs, request.source.url):
        return (
            MoveMode.CLIENT,
            f"{request.source.name} is no queue's DLQ, so StartMessageMoveTask does not take it",
        )
    return MoveMode.NATIVE, f"{request.source.name} is a DLQ: SQS's own move task applies"


@dataclass(frozen=True, slots=True)
class RedriveTally:
    """What a client-side move did; `moved + failed + skipped == seen` always holds.

    In a dry run `moved` counts the messages that would have been moved, and nothing moves;
    with `keep` it counts the copies sent, and the originals stay.
    """

    seen: int = 0
    moved: int = 0
    failed: int = 0
    skipped: int = 0
    dry_run: bool = False
    failures: Mapping[str, int] = field(default_factory=dict)
    skips: Mapping[str, int] = field(default_factory=dict)
    stopped: str | None = None
    not_released: int = 0

    @property
    def adds_up(self) -> bool:
        return self.moved + self.failed + self.skipped == self.seen


def redrive(
    sqs: SQSClient,
    request: RedriveRequest,
    *,
    on_progress: Callable[[RedriveTally], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> RedriveTally:
    """Move messages client-side, in batches of up to 10.

    For each batch: send the copies with one SendMessageBatch per destination, then delete
    exactly the originals whose copy was sent. Messages not moved (skipped, failed, or all of
    them in a dry run) stay hidden until the run ends, so no message is looked at twice, and
    are then made visible at once, also when the run is interrupted. A crash between a send
    and its delete leaves the original in place: a rerun sends it again (a duplicate on a
    standard queue; on FIFO the same deduplication id within SQS's 5-minute window).
    """
    budget = usable_budget(sqs, request.source, request.reserve)
    return _ClientMove(sqs, request, budget, clock, sleep).run(on_progress)


class _ClientMove:
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
        self.clock = clock
        self.sleep = sleep
        self.sender = BatchSender(sqs)
        self.seen: set[str] = set()
        self.in_hand: dict[str, str] = {}  # message id -> receipt handle, not deleted yet
        self.moved = 0
        self.failures: Counter[str] = Counter()
        self.skips: Counter[str] = Counter()
        self.stopped: str | None = None
        self.not_released = 0
        self.source_urls: dict[str, str | None] = {}
        self.started = clock()
        self.sent_total = 0
        rate = request.rate
        self.batch_size = (
            MAX_BATCH_ENTRIES if rate is None else max(1, min(MAX_BATCH_ENTRIES, math.floor(rate)))
        )

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
        )

    def run(self, on_progress: Callable[[RedriveTally], None] | None) -> RedriveTally:
        try:
            while (want := self._wanted()) > 0:
                fresh = self._receive(want)
                if not fresh:
                    break
                self._handle(fresh)
                if on_progress is not None:
                    on_progress(self.tally())
                if self._budget_spent(fresh):
                    break
        finally:
            self.not_released = release(self.sqs, self.request.source.url, self.in_hand.values())
        return self.tally()

    def _wanted(self) -> int:
        """How many messages the next receive asks for (0: the limit is reached)."""
        if self.request.limit is None:
            return self.batch_size
        handled = self.moved + sum(self.failures.values())
        return min(self.batch_size, self.request.limit - handled)

    def _receive(self, want: int) -> list[MessageTypeDef]:
        request = self.request
        batch = receive(
            self.sqs,
            request.source.url,
            want,
            visibility_timeout=request.hide_seconds,
            wait_seconds=request.wait_seconds,
        )
        fresh: list[MessageTypeDef] = []
        for message in batch:
            # A message seen before came back after its hide time: keep its new handle only.
            self.in_hand[message["MessageId"]] = message["ReceiptHandle"]
            if message["MessageId"] not in self.seen:
                self.seen.add(message["MessageId"])
                fresh.append(message)
        return fresh

    def _handle(self, fresh: Sequence[MessageTypeDef]) -> None:
        copies: list[tuple[MessageTypeDef, OutboundMessage]] = []
        for message in fresh:
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
        if self.request.rate is not None:
            pause = self.started + self.sent_total / self.request.rate - self.clock()
            if pause > 0:
                self.sleep(pause)
        failed = self.sender.send([copy for _, copy in copies])
        self.sent_total += len(copies)
        for failure in failed.values():
            self.failures[failure.code or "send-failed"] += 1
        sent = [message for message, _ in copies if message["MessageId"] not in failed]
        if self.request.keep:
            # Copy mode: the originals stay in hand and are made visible again at the end.
            self.moved += len(sent)
            return
        not_deleted = set(delete_messages(self.sqs, self.request.source.url, sent))
        for message in sent:
            if message["MessageId"] in not_deleted:
                self.failures[FailReason.DELETE] += 1
            else:
                self.moved += 1
                self.in_hand.pop(message["MessageId"], None)

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


def plan_copy(
    sqs: SQSClient,
    message: MessageTypeDef,
    request: RedriveRequest,
    source_urls: dict[str, str | None],
) -> OutboundMessage | SkipReason | FailReason:
    """The copy of one received message, or why it is skipped or cannot be copied.

    Body and every attribute byte for byte, except the park reason and the not-before
    attribute (never on a message for the main queue) and, with `reset_count`, the count.
    """
    parsed = attributes.from_sqs(message.get("MessageAttributes"))
    values = parsed.values
    reason_text = park_reason_of(message.get("Body", ""), values) or NO_REASON
    if request.reasons and reason_text not in request.reasons:
        return SkipReason.FILTERED
    system = message.get("Attributes", {})
    if request.destination is not None:
        destination = request.destination.url
    else:
        source_arn = system.get("DeadLetterQueueSourceArn")
        found = _source_url(sqs, source_arn, source_urls) if source_arn else None
        if found is None:
            return SkipReason.NO_SOURCE
        destination = found
    if parsed.dropped:
        return FailReason.UNCOPYABLE
    group = system.get("MessageGroupId")
    fifo = is_fifo_url(destination)
    if fifo and not group:
        return FailReason.MISSING_GROUP
    dropped = {
        PARK_REASON_ATTRIBUTE,
        PARK_ERROR_ATTRIBUTE,
        NOT_BEFORE_ATTRIBUTE,
        FIRST_FAILURE_ATTRIBUTE,
    }
    if request.reset_count:
        dropped.add(request.count_attribute)
    carried: dict[str, Attribute] = {k: v for k, v in values.items() if k not in dropped}
    return OutboundMessage(
        record_id=message["MessageId"],
        queue_url=destination,
        body=message.get("Body", ""),
        attributes=carried,
        message_group_id=group,
        # Deterministic: a rerun after a crash between send and delete is deduplicated by SQS
        # within its 5-minute window; fresh, because each parked message has its own id.
        deduplication_id=f"{message['MessageId']}-redrive" if fifo else None,
        trace_header=system.get("AWSTraceHeader"),
    )


def _source_url(sqs: SQSClient, arn: str, cache: dict[str, str | None]) -> str | None:
    from botocore.exceptions import ClientError

    if arn not in cache:
        try:
            parsed = QueueArn.parse(arn)
            cache[arn] = sqs.get_queue_url(
                QueueName=parsed.name, QueueOwnerAWSAccountId=parsed.account
            )["QueueUrl"]
        except (ValueError, ClientError):
            cache[arn] = None
    return cache[arn]
