"""The vocabulary of a record's decision (made in `dlq_replay.engine.decide`), and the SQS copy
a decision writes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from dlq_replay.core import attributes
from dlq_replay.core.attributes import (
    FIRST_FAILURE_ATTRIBUTE,
    NOT_BEFORE_ATTRIBUTE,
    ORIGIN_ATTRIBUTE,
    PARK_REASON_ATTRIBUTE,
    Attribute,
)
from dlq_replay.core.backoff import MAX_SQS_DELAY_SECONDS, MAX_VISIBILITY_TIMEOUT_SECONDS
from dlq_replay.core.messages import InboundMessage, OutboundMessage, fits_limits
from dlq_replay.core.queues import is_fifo_url
from dlq_replay.core.settings import Settings

# SQS caps visibility at 12 hours from the receive, moments ago: a hold stays a minute short.
MAX_HOLD_SECONDS = MAX_VISIBILITY_TIMEOUT_SECONDS - 60
# A FIFO operator queue needs a group even for a message that arrived without one.
FALLBACK_GROUP_ID = "dlq-replay-no-group"
# `dlq-replay-not-before` holds epoch seconds, well past the count's 10^9 bound.
NOT_BEFORE_LIMIT = 10**12


class ParkReason(StrEnum):
    MAX_ATTEMPTS = "max-attempts"
    INVALID_COUNT = "invalid-count"
    ATTRIBUTE_LIMIT = "attribute-limit"
    MISSING_GROUP_ID = "missing-group-id"
    UNKNOWN_SOURCE = "unknown-source"
    REJECTED = "rejected"
    MAX_AGE = "max-age"
    # The serverless kinds (engine/kinds):
    UNSUPPORTED_TARGET = "unsupported-target"
    TARGET_NOT_ALLOWED = "target-not-allowed"
    UNEXPECTED_KIND = "unexpected-kind"
    UNKNOWN_TARGET = "unknown-target"
    # A target's refusal that no retry can change (engine/kinds/eventbridge.py):
    TARGET_NOT_IN_RULE = "target-not-in-rule"
    TRANSFORM_NOT_APPLIED = "transform-not-applied"
    NOT_AN_EVENT = "not-an-event"


class Action(StrEnum):
    REPLAY = "replay"  # send to the destination now, with a delay SQS can serve
    DEFER = "defer"  # write a copy back into the DLQ that waits for `not_before`
    HOLD = "hold"  # a waiting copy arrived early: hide it again, report it as not done
    RELEASE = "release"  # a waiting copy whose time has come: send it on, count unchanged
    PARK = "park"  # send to the operator queue
    SKIP = "skip"  # FIFO: not attempted, an earlier record of its group is not done
    FAIL = "fail"  # the record lacks what its decision needs: nothing written, not done


@dataclass(frozen=True, slots=True)
class Decision:
    """The plan for one record. `attempt` is the count the written copy carries."""

    action: Action
    destination: str | None = None
    attempt: int | None = None
    delay: int = 0
    not_before: int | None = None
    reason: ParkReason | None = None
    drawn_delay: int | None = None  # the backoff drawn for a new attempt
    problem: str | None = None  # why a FAIL: one line for the log
    first_failure: int | None = None  # epoch seconds, for the copy (max-age policy on only)
    error: str | None = None  # the service's error, for a parked copy's `dlq-replay-error`

    @property
    def clamped(self) -> bool:
        """A delay cut to what the destination takes: no attribute slot was free to wait."""
        return self.action is Action.REPLAY and self.drawn_delay not in (None, self.delay)


def queue_delay_limit(queue_url: str) -> int:
    """The longest DelaySeconds a queue takes on one message: none at all on FIFO."""
    return 0 if is_fifo_url(queue_url) else MAX_SQS_DELAY_SECONDS


def first_failure_of(message: InboundMessage) -> int | None:
    """When the message first failed (epoch seconds): a replayed copy's attribute, else SQS's
    first receive of this copy (later: the age is a lower bound), else None."""
    carried = message.attributes.get(FIRST_FAILURE_ATTRIBUTE)
    if carried is not None:
        value = attributes.parse_count(carried, NOT_BEFORE_LIMIT)
        if value is not None:
            return value
    if message.first_received_ms is not None:
        return message.first_received_ms // 1000
    return None


def park_reason_of(body: str, values: Mapping[str, Attribute]) -> str | None:
    """Why an operator-queue message was parked: its park-reason attribute, `attribute-limit`
    when there is no room for one, None for SQS's own safety net's park."""
    reason = values.get(PARK_REASON_ATTRIBUTE)
    if reason is not None:
        return reason.string_value
    with_reason = {**values, PARK_REASON_ATTRIBUTE: attributes.string(ParkReason.ATTRIBUTE_LIMIT)}
    return None if fits_limits(body, with_reason) else ParkReason.ATTRIBUTE_LIMIT.value


def build_copy(message: InboundMessage, decision: Decision, settings: Settings) -> OutboundMessage:
    """The message to write for a decision (not HOLD, which writes nothing)."""
    carried = {k: v for k, v in message.attributes.items() if k != NOT_BEFORE_ATTRIBUTE}
    if decision.action is Action.PARK:
        queue_url = settings.operator_queue_url
        if decision.reason is not None:
            reason = attributes.string(decision.reason)
            carried = with_room(message.body, carried, [(PARK_REASON_ATTRIBUTE, reason)])
        suffix = "park"
    else:
        if decision.destination is None or decision.attempt is None:
            raise ValueError(f"{decision.action} needs a destination and an attempt")
        queue_url = decision.destination
        carried[settings.count_attribute] = _count_attribute(message, decision, settings)
        if decision.not_before is not None:
            carried[NOT_BEFORE_ATTRIBUTE] = attributes.number(decision.not_before)
        # Where a slot is free (an aid, never worth a park or a clamped delay).
        optional = []
        if decision.first_failure is not None and FIRST_FAILURE_ATTRIBUTE not in carried:
            optional.append((FIRST_FAILURE_ATTRIBUTE, attributes.number(decision.first_failure)))
        if settings.write_origin:
            optional.append((ORIGIN_ATTRIBUTE, _origin(message, decision)))
        carried = with_room(message.body, carried, optional)
        suffix = f"{decision.action.value}-{decision.attempt}"
    return sqs_copy(message, queue_url, carried, suffix, decision.delay)


def sqs_copy(
    message: InboundMessage,
    queue_url: str,
    carried: Mapping[str, Attribute],
    key: str,
    delay: int = 0,
) -> OutboundMessage:
    """The one builder of a copy, the replay's and every operator move's. On FIFO: no delay, a
    group, and the deduplication id `<message id>-<key>`, so SQS drops a send repeated after a
    crash."""
    fifo = is_fifo_url(queue_url)
    return OutboundMessage(
        record_id=message.message_id,
        queue_url=queue_url,
        body=message.body,
        attributes=carried,
        delay_seconds=0 if fifo else delay,
        message_group_id=message.message_group_id or (FALLBACK_GROUP_ID if fifo else None),
        deduplication_id=f"{message.message_id}-{key}" if fifo else None,
        trace_header=message.trace_header,
    )


def with_room(
    body: str, carried: dict[str, Attribute], optional: Iterable[tuple[str, Attribute]]
) -> dict[str, Attribute]:
    """`carried` with each optional attribute, in order, that still fits SQS's limits."""
    for name, value in optional:
        if fits_limits(body, added := {**carried, name: value}):
            carried = added
    return carried


def _origin(message: InboundMessage, decision: Decision) -> Attribute:
    """`<first DLQ message id>/<attempt>`, the id kept from the copy's own origin."""
    carried = message.attributes.get(ORIGIN_ATTRIBUTE)
    text = carried.string_value if carried is not None else None
    first_id = text.rsplit("/", 1)[0] if text else message.message_id
    return attributes.string(f"{first_id}/{decision.attempt}")


def _count_attribute(message: InboundMessage, decision: Decision, settings: Settings) -> Attribute:
    """A release keeps the count it was written back with; everything else writes the attempt."""
    existing = message.attributes.get(settings.count_attribute)
    if decision.action is Action.RELEASE and existing is not None:
        return existing
    return attributes.number(decision.attempt or 0)
