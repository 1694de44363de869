"""`redrive`: what to move and how. SQS's native move task where it can do the job, else a
client-side move (`ops.clientmove.redrive`) that sends each copy and then deletes exactly the
originals whose copy was sent; `plan_copy` makes one message's copy."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
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
from dlq_replay.core.messages import OutboundMessage
from dlq_replay.core.queues import is_fifo_url
from dlq_replay.core.settings import DEFAULT_COUNT_ATTRIBUTE
from dlq_replay.ops.pacing import PaceReport, PaceStop, UntilFailing
from dlq_replay.ops.queues import QueueInfo, source_queue_url
from dlq_replay.ops.select import Selector
from dlq_replay.sqs.sources import dead_letter_sources

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef


# Batches a client-side move keeps in flight: each is a receive, a send and a delete, so one
# worker waits three round trips per 10 messages (bench/bench_redrive.py).
DEFAULT_CONCURRENCY = 16
MAX_CONCURRENCY = 64


class MoveMode(StrEnum):
    NATIVE = "native"  # SQS's StartMessageMoveTask
    CLIENT = "client"  # receive, send copies, delete what was sent


class SkipReason(StrEnum):
    FILTERED = "filtered"  # its park reason is not one asked for
    NO_SOURCE = "no-source-queue"  # --to source, and SQS recorded no source queue


class FailReason(StrEnum):
    UNCOPYABLE = "uncopyable-attribute"  # a list-valued attribute SQS will not take on send
    MISSING_GROUP = "missing-group-id"  # a FIFO destination and no MessageGroupId


@dataclass(frozen=True, slots=True)
class RedriveRequest:
    """What to move where, and how; the queues are already resolved."""

    source: QueueInfo
    destination: QueueInfo | None  # None: back to each message's source queue
    limit: int | None = None
    rate: float | None = None  # messages per second
    reset_count: bool = False
    keep: bool = False  # copy mode: send copies, leave the originals (made visible again)
    selector: Selector = field(default_factory=Selector)  # reason, group, attribute, body, age
    dry_run: bool = False
    count_attribute: str = DEFAULT_COUNT_ATTRIBUTE
    hide_seconds: int = 120
    wait_seconds: int = 1
    reserve: int = 1
    concurrency: int = DEFAULT_CONCURRENCY  # batches in flight at once (client-side)
    until_failing: UntilFailing | None = None  # adaptive pace, watching a DLQ (client-side)

    @property
    def rewrites(self) -> bool:
        return (
            self.reset_count
            or self.keep
            or not self.selector.empty
            or self.limit is not None
            or self.until_failing is not None
        )


class ModeReason(StrEnum):
    """Why `choose_mode` chose the mode it did (the CLI words it)."""

    ASKED = "client-side-asked"  # the caller asked for a client-side move
    REWRITES = "rewrites"  # something only a client-side move can do (`Rewrite`)
    NOT_A_DLQ = "not-a-dlq"  # StartMessageMoveTask takes only some queue's DLQ
    IS_A_DLQ = "is-a-dlq"  # SQS's own move task applies


class Rewrite(StrEnum):
    """What a request asks that only a client-side move can do."""

    RESET_COUNT = "reset-count"
    KEEP = "keep"
    FILTER_REASON = "filter-reason"
    SELECTION = "selection"
    LIMIT = "limit"
    UNTIL_FAILING = "until-failing"


@dataclass(frozen=True, slots=True)
class ModeChoice:
    mode: MoveMode
    reason: ModeReason
    rewrites: tuple[Rewrite, ...] = ()


def rewrites_of(request: RedriveRequest) -> tuple[Rewrite, ...]:
    return tuple(
        rewrite
        for rewrite, on in (
            (Rewrite.RESET_COUNT, request.reset_count),
            (Rewrite.KEEP, request.keep),
            (Rewrite.FILTER_REASON, bool(request.selector.reasons)),
            (Rewrite.SELECTION, not replace(request.selector, reasons=frozenset()).empty),
            (Rewrite.LIMIT, request.limit is not None),
            (Rewrite.UNTIL_FAILING, request.until_failing is not None),
        )
        if on
    )


def choose_mode(
    sqs: SQSClient,
    request: RedriveRequest,
    *,
    client_side: bool,
    sources: Sequence[str] | None = None,
) -> ModeChoice:
    """Native move where SQS offers it, else client-side; with the reason. `sources`: the
    queues that dead-letter into the source, when already read (the pre-flight reads them)."""
    if client_side:
        return ModeChoice(MoveMode.CLIENT, ModeReason.ASKED)
    if request.rewrites:
        return ModeChoice(MoveMode.CLIENT, ModeReason.REWRITES, rewrites_of(request))
    if sources is None:
        sources = dead_letter_sources(sqs, request.source.url)
    if not sources:
        return ModeChoice(MoveMode.CLIENT, ModeReason.NOT_A_DLQ)
    return ModeChoice(MoveMode.NATIVE, ModeReason.IS_A_DLQ)


@dataclass(frozen=True, slots=True)
class BudgetStop:
    """The receive budget stopped the run: a message seen keeps `reserve` or fewer receives
    before SQS moves it from `queue` to `target`."""

    queue: str
    reserve: int
    target: str


Stop = BudgetStop | PaceStop


@dataclass(frozen=True, slots=True)
class RedriveTally:
    """What a client-side move confirmed; `moved + sent_not_deleted + failed + skipped +
    given_back + unsettled == seen` always holds, `seen` being the messages received.

    `moved`: copy sent and original deleted (in a dry run: would have been moved, and nothing
    moves; with `keep`: the copies sent, the originals stay). `sent_not_deleted`: the copy was
    sent and the original is still in the source queue, so a rerun sends it again.
    `given_back`: received, then made visible again untouched (the run stopped first).
    `unsettled`: received and neither sent, failed, skipped nor given back yet (its copy being
    planned or sent): 0 once a run has ended, more in a snapshot of an abandoned run.
    """

    seen: int = 0
    moved: int = 0
    sent_not_deleted: int = 0
    failed: int = 0
    skipped: int = 0
    given_back: int = 0
    unsettled: int = 0
    dry_run: bool = False
    failures: Mapping[str, int] = field(default_factory=dict)
    skips: Mapping[str, int] = field(default_factory=dict)
    stopped: Stop | None = None
    interrupted: bool = False  # the caller's stop token ended the run
    not_released: int = 0  # of those held, SQS refused to make visible: back after hide_seconds
    hidden_until: float | None = None  # epoch seconds: when those come back at the latest
    pace: PaceReport | None = None  # with until_failing
    processes: int = 1  # that moved (ops.processes)

    @property
    def adds_up(self) -> bool:
        handled = self.moved + self.sent_not_deleted + self.failed + self.skipped
        return handled + self.given_back + self.unsettled == self.seen


@dataclass(frozen=True, slots=True)
class Leftover:
    """What a run abandoned mid-flight leaves behind, as far as it knows: an upper bound of
    what stays hidden (`hidden + receiving_up_to`), never below it.

    Receives still in flight hide messages the run never saw, up to what they asked for;
    deletes and visibility changes in flight may still take effect, so the messages they name
    are counted hidden (`deleting`, `releasing` say how many of `hidden` that is)."""

    hidden: int  # received and not deleted: hidden until `hidden_until`
    hidden_until: float | None  # epoch seconds
    sent_not_deleted: int  # copies confirmed sent whose original is still there
    unconfirmed: int  # copies whose send (or original whose delete) was in flight
    receives: int = 0  # ReceiveMessage calls in flight
    receiving_up_to: int = 0  # the messages they asked for: hidden too if SQS answers them
    receiving_until: float | None = None  # epoch seconds: when those come back at the latest
    deleting: int = 0  # of `hidden`: a delete of theirs is in flight
    releasing: int = 0  # of `hidden`: a change back to visible of theirs is in flight

    @property
    def at_most(self) -> int:
        """The most messages that can stay hidden."""
        return self.hidden + self.receiving_up_to


def plan_copy(
    sqs: SQSClient,
    message: MessageTypeDef,
    request: RedriveRequest,
    source_urls: dict[str, str | None],
    now: float | None = None,
) -> OutboundMessage | SkipReason | FailReason:
    """The copy of one received message, or why it is skipped or cannot be copied.

    Body and every attribute byte for byte, except the park reason and the not-before
    attribute (never on a message for the main queue) and, with `reset_count`, the count.
    """
    parsed = attributes.from_sqs(message.get("MessageAttributes"))
    values = parsed.values
    if not request.selector.empty:
        at = time.time() if now is None else now
        if not request.selector.matches(message, values, at):
            return SkipReason.FILTERED
    system = message.get("Attributes", {})
    if request.destination is not None:
        destination = request.destination.url
    else:
        source_arn = system.get("DeadLetterQueueSourceArn")
        found = source_queue_url(sqs, source_arn, source_urls) if source_arn else None
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
