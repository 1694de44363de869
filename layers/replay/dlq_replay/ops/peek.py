"""`peek`: look at messages without consuming them, within the receive budget."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from dlq_replay.core import attributes
from dlq_replay.core.decision import park_reason_of
from dlq_replay.core.kinds import RecordKind
from dlq_replay.core.settings import DEFAULT_COUNT_ATTRIBUTE
from dlq_replay.engine.kinds import recorded_error
from dlq_replay.ops.queueinfo import QueueInfo
from dlq_replay.ops.receivememory import ReceiveMemory
from dlq_replay.ops.receiving import (
    ALL_KINDS,
    ReceiveBudget,
    Receiving,
    receive_count_of,
    recognised,
    usable_budget,
)
from dlq_replay.ops.select import Selector

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef


@dataclass(frozen=True, slots=True)
class PeekedMessage:
    message_id: str
    replay_count: int | None  # None: the count attribute holds no valid count
    raw_count: str | None
    park_reason: str | None
    group_id: str | None
    attribute_names: tuple[str, ...]
    sent_at: datetime | None
    age_seconds: float | None
    receive_count: int  # after this peek
    receives_left: int | None  # before SQS moves it on (queues with a RedrivePolicy)
    body: str | None  # only when asked for
    source_arn: str | None = None
    kind: str = "sqs"  # who wrote it (core/kinds.py): sqs, lambda, lambda-destination, ...
    target_arn: str | None = None  # where a record of a serverless kind goes back to
    error_code: str | None = None  # the service's error, as it recorded it
    error_message: str | None = None
    error: str | None = None  # both in one line, "<code>: <message>", as a parked copy has it


@dataclass(frozen=True, slots=True)
class PeekResult:
    queue: QueueInfo
    messages: tuple[PeekedMessage, ...]
    budget: ReceiveBudget | None
    stopped: str | None = None  # why the peek stopped before its limit (or the queue's end)
    not_released: int = 0  # messages SQS refused to make visible again
    examined: int = 0  # messages received, selected or not


@dataclass(frozen=True, slots=True)
class PeekRequest:
    source: QueueInfo
    limit: int = 10
    body: bool = False  # the bodies too
    count_attribute: str = DEFAULT_COUNT_ATTRIBUTE
    selector: Selector = field(default_factory=Selector)  # empty: every message
    hide_seconds: int = 30
    wait_seconds: int = 1
    reserve: int = 1
    # The allowed targets (REPLAY_TARGET_ARNS): they name a `lambda` record's function.
    replay_targets: frozenset[str] = frozenset()
    accepted_kinds: frozenset[RecordKind] = ALL_KINDS  # the stack's DLQ_KIND's (ops.receiving)


def peek(
    sqs: SQSClient,
    request: PeekRequest,
    *,
    now: Callable[[], float] = time.time,
    memory: ReceiveMemory | None = None,
) -> PeekResult:
    """Each message received once, hidden for `hide_seconds` at most (a crash cannot keep it
    away for long), and visible again as soon as the peek has them all; with a `memory`, a peek
    that could move a message earlier reads saw is refused."""
    queue, selector = request.source, request.selector
    budget = usable_budget(sqs, queue, request.reserve)
    if memory is not None and budget is not None:
        memory.check(queue, budget)
    receiving = Receiving(sqs, queue.url, budget, request.hide_seconds, request.wait_seconds)
    selected: list[MessageTypeDef] = []
    try:
        for batch in receiving.batches(request.limit, lambda m: selector.takes(m, now())):
            selected.extend(batch)
    finally:
        examined = len(receiving.handles)
        refused = receiving.release()
        if memory is not None:
            memory.record(queue, receiving.sighting)
    messages = tuple(_peeked(m, request, budget, now()) for m in selected[: request.limit])
    return PeekResult(queue, messages, budget, receiving.stopped, refused, examined=examined)


def _peeked(
    message: MessageTypeDef, request: PeekRequest, budget: ReceiveBudget | None, now: float
) -> PeekedMessage:
    parsed = attributes.from_sqs(message.get("MessageAttributes"))
    values = parsed.values
    system = message.get("Attributes", {})
    count_value = values.get(request.count_attribute)
    kind = recognised(message, request.replay_targets, request.accepted_kinds)
    sent_ms = system.get("SentTimestamp")
    sent_at = datetime.fromtimestamp(int(sent_ms) / 1000, UTC) if sent_ms else None
    received = receive_count_of(message)
    return PeekedMessage(
        message_id=message["MessageId"],
        replay_count=attributes.parse_count(count_value),
        raw_count=count_value.string_value if count_value is not None else None,
        park_reason=park_reason_of(message.get("Body", ""), values),
        group_id=system.get("MessageGroupId"),
        attribute_names=tuple(sorted([*values, *parsed.dropped])),
        sent_at=sent_at,
        age_seconds=max(0.0, now - int(sent_ms) / 1000) if sent_ms else None,
        receive_count=received,
        receives_left=budget.left(received) if budget is not None else None,
        body=message.get("Body", "") if request.body else None,
        source_arn=system.get("DeadLetterQueueSourceArn"),
        kind=kind.kind.value,
        target_arn=kind.target_arn,
        error_code=kind.error_code,
        error_message=kind.error_message,
        error=recorded_error(kind) or None,
    )
