"""`redrive`: what to move and how. SQS's native move task where it can do the job, else a
client-side move (`ops.clientmove.redrive`) that sends each copy and then deletes exactly the
originals whose copy was sent; `plan_copy` makes one message's copy.

With `--to source`, a record a serverless service wrote (core/kinds.py) goes back to the
target it names, by the replay's rules (`engine.kinds.target_refusal`): only to an ARN of
`target_arns` (the operator's --target-arn) that the stack's own ReplayTargetArns allows too
(`stack_targets`, when known); `plan_copy` then makes its `Delivery`, and a record that may
not be delivered stays where it is, counted with why."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING

from dlq_replay.core.attributes import (
    FIRST_FAILURE_ATTRIBUTE,
    NOT_BEFORE_ATTRIBUTE,
    PARK_ERROR_ATTRIBUTE,
    PARK_REASON_ATTRIBUTE,
)
from dlq_replay.core.decision import ParkReason, sqs_copy
from dlq_replay.core.kinds import Recognised, RecordKind
from dlq_replay.core.messages import InboundMessage, OutboundMessage
from dlq_replay.core.queues import is_fifo_url, target_allowed
from dlq_replay.core.settings import DEFAULT_COUNT_ATTRIBUTE
from dlq_replay.engine.kinds import delivery_of, recognise, target_refusal
from dlq_replay.ops.pacing import PaceReport, PaceStop, UntilFailing
from dlq_replay.ops.queueinfo import QueueInfo, source_queue_url
from dlq_replay.ops.recognition import ALL_KINDS
from dlq_replay.ops.select import Selector
from dlq_replay.sqs.sending import SendFailure
from dlq_replay.sqs.sources import dead_letter_sources
from dlq_replay.targets.delivery import Delivery, Refused

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

    from dlq_replay.targets.deliverer import Deliverer


# Batches a client-side move keeps in flight: each is a receive, a send and a delete, so one
# worker waits three round trips per 10 messages (bench/bench_redrive.py).
DEFAULT_CONCURRENCY = 16
MAX_CONCURRENCY = 64


# The key of a redrive's FIFO deduplication id (`<message id>-redrive`): a rerun after a crash
# between send and delete is deduplicated by SQS within its 5-minute window.
REDRIVE_KEY = "redrive"
# What a redrive's copy leaves off: the park's marks, and the replay's wait and first failure.
_MOVE_DROPS = frozenset(
    {PARK_REASON_ATTRIBUTE, PARK_ERROR_ATTRIBUTE, NOT_BEFORE_ATTRIBUTE, FIRST_FAILURE_ATTRIBUTE}
)


class MoveMode(StrEnum):
    NATIVE = "native"  # SQS's StartMessageMoveTask
    CLIENT = "client"  # receive, send copies, delete what was sent


class SkipReason(StrEnum):
    FILTERED = "filtered"  # its park reason is not one asked for
    NO_SOURCE = "no-source-queue"  # --to source, and SQS recorded no source queue
    # --to source, a record of a serverless kind: no --target-arn, or a target the replay
    # would not deliver to (its park reasons: engine.kinds.target_refusal).
    NO_TARGETS = "target-arn-required"
    UNKNOWN_TARGET = "unknown-target"
    UNSUPPORTED_TARGET = "unsupported-target"
    TARGET_NOT_ALLOWED = "target-not-allowed"


# The skips of `--to source` that leave a record in place for want of a destination.
NOT_ROUTED = frozenset(SkipReason) - {SkipReason.FILTERED}


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
    # --to source: the only targets a serverless kind's record is delivered to (--target-arn).
    target_arns: frozenset[str] = frozenset()
    # ... of which only those the stack allows too (its ReplayTargetArns); None: no stack's
    # list is known, the operator's alone applies.
    stack_targets: frozenset[str] | None = None
    accepted_kinds: frozenset[RecordKind] = ALL_KINDS  # the stack's DLQ_KIND's (ops.recognition)

    @property
    def rewrites(self) -> bool:
        return bool(rewrites_of(self))


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
    DELIVER = "deliver"  # records of serverless kinds delivered to their targets


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
            (Rewrite.DELIVER, bool(request.target_arns)),
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
    A record of a serverless kind delivered to its target counts as moved (sent), and in
    `delivered` by target; a delivery the target refused as failed, by the service's error
    code (`errors`: the first message of each).
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
    delivered: Mapping[str, int] = field(default_factory=dict)  # target ARN -> records
    errors: Mapping[str, str] = field(default_factory=dict)  # refusal code -> a message

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
) -> OutboundMessage | Delivery | SkipReason | FailReason:
    """The copy of one received message, or why it is skipped or cannot be copied: the
    replay's builders (`sqs_copy`, `delivery_of`) with the redrive's key.

    Body and every attribute byte for byte, except the park's marks and the replay's wait and
    first failure (`_MOVE_DROPS`: a fresh start) and, with `reset_count`, the count. To the
    source, a serverless kind's record is a `Delivery` to its target instead."""
    inbound = InboundMessage.from_boto3(message, request.source.arn)
    if not request.selector.empty:
        at = time.time() if now is None else now
        if not request.selector.matches(message, inbound.attributes, at):
            return SkipReason.FILTERED
    if request.destination is not None:
        destination = request.destination.url
    else:
        record = recognise(inbound, request.target_arns, request.accepted_kinds)
        if record.kind is not RecordKind.SQS:
            return plan_delivery(inbound, record, request.target_arns, request.stack_targets)
        source_arn = inbound.dead_letter_source_arn
        found = source_queue_url(sqs, source_arn, source_urls) if source_arn else None
        if found is None:
            return SkipReason.NO_SOURCE
        destination = found
    if inbound.dropped_attributes:
        return FailReason.UNCOPYABLE
    if is_fifo_url(destination) and inbound.message_group_id is None:
        return FailReason.MISSING_GROUP
    dropped = _MOVE_DROPS | {request.count_attribute} if request.reset_count else _MOVE_DROPS
    carried = {k: v for k, v in inbound.attributes.items() if k not in dropped}
    return sqs_copy(inbound, destination, carried, REDRIVE_KEY)


def plan_delivery(
    message: MessageTypeDef | InboundMessage,
    record: Recognised,
    target_arns: frozenset[str],
    stack_targets: frozenset[str] | None = None,
) -> Delivery | SkipReason:
    """A serverless kind's record back to its target, by the replay's rules, if both the
    operator (`target_arns`) and the stack (`stack_targets`, when known) allow it; the payload
    as the replay delivers it (the body, or a destination record's request payload), and the
    account of the DLQ it was read from (`InboundMessage.queue_arn`), as the replay's."""
    if not isinstance(message, InboundMessage):
        message = InboundMessage.from_boto3(message)
    if not target_arns:
        return SkipReason.NO_TARGETS
    refusal = target_refusal(record.target_arn, target_arns)
    stack_refuses = stack_targets is not None and not target_allowed(
        record.target_arn or "", stack_targets
    )
    if refusal is None and stack_refuses:
        refusal = ParkReason.TARGET_NOT_ALLOWED
    if refusal is not None or record.target_arn is None:
        return SkipReason(refusal or ParkReason.UNKNOWN_TARGET)
    # A FIFO target: a rerun after a crash between delivery and delete is deduplicated within
    # SQS's five minutes, as a copy to a FIFO queue is.
    return delivery_of(message, record, record.target_arn, REDRIVE_KEY)


def both_allow(listed: frozenset[str], allowed: frozenset[str]) -> frozenset[str]:
    """The targets both lists allow, as one list: an ARN of either that the other allows (as
    is, or as a version or alias of a function it lists unqualified). `{fn}` and
    `{fn:live}` give `{fn:live}`."""
    return frozenset(
        {arn for arn in listed if target_allowed(arn, allowed)}
        | {arn for arn in allowed if target_allowed(arn, listed)}
    )


def deliveries_sent(deliverer: Deliverer, deliveries: Sequence[Delivery]) -> dict[str, SendFailure]:
    """Deliver them, answered as `BatchSender.send` answers for copies: the record ids a
    target refused, with the service's error."""
    outcomes = deliverer.deliver(deliveries)
    failed: dict[str, SendFailure] = {}
    for delivery in deliveries:
        outcome = outcomes.get(delivery.record_id)
        if outcome is None:
            failed[delivery.record_id] = SendFailure("NoAnswer", "no outcome", permanent=False)
        elif isinstance(outcome, Refused):
            failed[delivery.record_id] = SendFailure(outcome.code, outcome.message, permanent=True)
    return failed
