"""`redrive`: what to move and how. SQS's native move task where it can do the job, else a
client-side move (`ops.clientmove`); `plan_copy` makes one message's copy. With `--to source`,
a record a serverless service wrote goes back to its target only if both the operator's
--target-arn and the stack's ReplayTargetArns allow it; else it stays, counted with why."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

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
from dlq_replay.ops.movefollow import tag_carried
from dlq_replay.ops.opserror import OpsError
from dlq_replay.ops.pacing import PaceReport, PaceStop, UntilFailing
from dlq_replay.ops.queueinfo import QueueInfo, source_queue_url
from dlq_replay.ops.receiving import ALL_KINDS
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
    accepted_kinds: frozenset[RecordKind] = ALL_KINDS  # the stack's DLQ_KIND's (ops.receiving)
    # The action id each copy carries in `dlq-replay-action` (follow/): None, not followed.
    follow_id: str | None = None


class ModeReason(StrEnum):
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


def choose_mode(
    sqs: SQSClient,
    request: RedriveRequest,
    *,
    client_side: bool,
    sources: Sequence[str] | None = None,
) -> ModeChoice:
    """Native move where SQS offers it, else client-side, and why. `sources`: the queues
    that dead-letter into the source, when the pre-flight read them."""
    if client_side:
        return ModeChoice(MoveMode.CLIENT, ModeReason.ASKED)
    rewrites = (
        (Rewrite.RESET_COUNT, request.reset_count),
        (Rewrite.KEEP, request.keep),
        (Rewrite.FILTER_REASON, bool(request.selector.reasons)),
        (Rewrite.SELECTION, not replace(request.selector, reasons=frozenset()).empty),
        (Rewrite.LIMIT, request.limit is not None),
        (Rewrite.UNTIL_FAILING, request.until_failing is not None),
        (Rewrite.DELIVER, bool(request.target_arns)),
    )
    if asked := tuple(rewrite for rewrite, on in rewrites if on):
        return ModeChoice(MoveMode.CLIENT, ModeReason.REWRITES, asked)
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
    given_back + unsettled == seen` always holds, `seen` being the messages received. A record
    delivered to its target counts as moved; one the target refused as failed."""

    seen: int = 0
    moved: int = 0  # copy sent, original deleted (with `keep`: sent; dry run: would be)
    sent_not_deleted: int = 0  # the original is still in the source: a rerun sends it again
    failed: int = 0
    skipped: int = 0
    given_back: int = 0  # received, then made visible again untouched (the run stopped first)
    unsettled: int = 0  # received, not yet sent, failed, skipped or given back: 0 at the end
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
    processes: int = 1  # that moved: 2 with a second one (`ops.companion`)

    @property
    def adds_up(self) -> bool:
        handled = self.moved + self.sent_not_deleted + self.failed + self.skipped
        return handled + self.given_back + self.unsettled == self.seen


@dataclass(frozen=True, slots=True)
class Leftover:
    """What a run abandoned mid-flight leaves: at most this stays hidden (a delete or release
    in flight may still take effect: `deleting`, `releasing` of `hidden`)."""

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
        return self.hidden + self.receiving_up_to


def plan_copy(
    sqs: SQSClient,
    message: MessageTypeDef,
    request: RedriveRequest,
    source_urls: dict[str, str | None],
    now: float | None = None,
) -> OutboundMessage | Delivery | SkipReason | FailReason:
    """The copy of one received message (by the replay's builders), or why it is skipped or
    cannot be copied: byte for byte but for `_MOVE_DROPS` (a fresh start), the count with
    `reset_count`, and with `follow_id` the move's tag where a slot is free."""
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
    if request.follow_id is not None:
        carried = tag_carried(inbound.body, carried, request.follow_id, inbound.message_id)
    return sqs_copy(inbound, destination, carried, REDRIVE_KEY)


def plan_delivery(
    message: MessageTypeDef | InboundMessage,
    record: Recognised,
    target_arns: frozenset[str],
    stack_targets: frozenset[str] | None = None,
) -> Delivery | SkipReason:
    """A serverless kind's record back to its target, as the replay delivers it, if both the
    operator (`target_arns`) and the stack (`stack_targets`, when known) allow it."""
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
    """An ARN of either list that the other allows: `{fn}` and `{fn:live}` give `{fn:live}`."""
    return frozenset(
        {arn for arn in listed if target_allowed(arn, allowed)}
        | {arn for arn in allowed if target_allowed(arn, listed)}
    )


def deliveries_sent(deliverer: Deliverer, deliveries: Sequence[Delivery]) -> dict[str, SendFailure]:
    """Deliver them; the record ids a target refused, as `BatchSender.send` answers."""
    outcomes = deliverer.deliver(deliveries)
    failed: dict[str, SendFailure] = {}
    for delivery in deliveries:
        outcome = outcomes.get(delivery.record_id)
        if outcome is None:
            failed[delivery.record_id] = SendFailure("NoAnswer", "no outcome", permanent=False)
        elif isinstance(outcome, Refused):
            failed[delivery.record_id] = SendFailure(outcome.code, outcome.message, permanent=True)
    return failed


# SQS's native move task (StartMessageMoveTask): only from a queue that is some queue's DLQ.
MAX_MOVE_RATE = 500  # StartMessageMoveTask's MaxNumberOfMessagesPerSecond limit
_FINAL_MOVE_STATES = frozenset({"COMPLETED", "CANCELLED", "FAILED"})


@dataclass(frozen=True, slots=True)
class MoveTask:
    status: str  # RUNNING, COMPLETED, CANCELLING, CANCELLED, FAILED
    moved: int
    to_move: int | None
    handle: str | None = None
    failure_reason: str | None = None
    source_arn: str | None = None
    destination_arn: str | None = None

    @property
    def finished(self) -> bool:
        return self.status in _FINAL_MOVE_STATES

    @property
    def succeeded(self) -> bool:
        return self.status == "COMPLETED"


def start_move_task(
    sqs: SQSClient, source_arn: str, destination_arn: str | None, rate: float | None
) -> str:
    """Start SQS's own move task; returns its handle. No destination: back to the sources."""
    params: dict[str, Any] = {"SourceArn": source_arn}
    if destination_arn is not None:
        params["DestinationArn"] = destination_arn
    if rate is not None:
        params["MaxNumberOfMessagesPerSecond"] = max(1, min(MAX_MOVE_RATE, math.floor(rate)))
    return sqs.start_message_move_task(**params)["TaskHandle"]


def wait_move_task(
    sqs: SQSClient,
    source_arn: str,
    *,
    poll_seconds: float = 5.0,
    on_progress: Callable[[MoveTask], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> MoveTask:
    """Poll ListMessageMoveTasks until the latest task of the source queue (only one can run at
    a time) has finished."""
    while True:
        found = sqs.list_message_move_tasks(SourceArn=source_arn, MaxResults=1).get("Results", [])
        if not found:
            raise OpsError(f"no message move task found for {source_arn}")
        to_move = found[0].get("ApproximateNumberOfMessagesToMove")
        task = MoveTask(
            status=str(found[0].get("Status", "UNKNOWN")),
            moved=int(found[0].get("ApproximateNumberOfMessagesMoved", 0)),
            to_move=int(to_move) if to_move is not None else None,
            handle=found[0].get("TaskHandle"),
            failure_reason=found[0].get("FailureReason"),
            source_arn=found[0].get("SourceArn"),
            destination_arn=found[0].get("DestinationArn"),
        )
        if on_progress is not None:
            on_progress(task)
        if task.finished:
            return task
        sleep(poll_seconds)
