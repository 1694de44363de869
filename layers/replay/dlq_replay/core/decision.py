"""What to do with one DLQ record: replay, write back to wait, hold, release or park.

Pure: no AWS client, no clock of its own, no random source of its own. The outcome for a record
is a value, never an exception (docs/design.md, 'What happens to one record').
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

from dlq_replay.core import attributes
from dlq_replay.core.attributes import (
    FIRST_FAILURE_ATTRIBUTE,
    NOT_BEFORE_ATTRIBUTE,
    ORIGIN_ATTRIBUTE,
    PARK_REASON_ATTRIBUTE,
    Attribute,
)
from dlq_replay.core.backoff import (
    MAX_SQS_DELAY_SECONDS,
    MAX_VISIBILITY_TIMEOUT_SECONDS,
    RandomSource,
    keyed_random,
)
from dlq_replay.core.messages import InboundMessage, OutboundMessage, fits_limits, unencodable
from dlq_replay.core.queues import QueueArn, is_fifo_url
from dlq_replay.core.settings import Settings

# SQS caps a message's visibility at 12 hours from when it was received; the record was
# received moments ago, so a hold stays a minute short of that.
MAX_HOLD_SECONDS = MAX_VISIBILITY_TIMEOUT_SECONDS - 60
# A FIFO operator queue needs a group even for a message that arrived without one.
FALLBACK_GROUP_ID = "dlq-replay-no-group"
# `dlq-replay-not-before` holds epoch seconds, well past the count's 10^9 bound.
_NOT_BEFORE_LIMIT = 10**12


class ParkReason(StrEnum):
    """Why a message went to the operator queue (the `dlq-replay-park-reason` values)."""

    MAX_ATTEMPTS = "max-attempts"
    INVALID_COUNT = "invalid-count"
    ATTRIBUTE_LIMIT = "attribute-limit"
    MISSING_GROUP_ID = "missing-group-id"
    UNKNOWN_SOURCE = "unknown-source"
    REJECTED = "rejected"
    MAX_AGE = "max-age"
    # The serverless kinds (core/delivery.py):
    UNSUPPORTED_TARGET = "unsupported-target"
    TARGET_NOT_ALLOWED = "target-not-allowed"
    UNEXPECTED_KIND = "unexpected-kind"
    UNKNOWN_TARGET = "unknown-target"


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
    # Epoch seconds the written copy carries as its first failure (max-age policy on only).
    first_failure: int | None = None
    # The service's error a parked delivery carries in `dlq-replay-error` (core/delivery.py).
    error: str | None = None

    @property
    def clamped(self) -> bool:
        """A delay cut to what the destination takes: no attribute slot was free to wait."""
        return self.action is Action.REPLAY and self.drawn_delay not in (None, self.delay)


def destination_limit(queue_url: str) -> int:
    """The longest DelaySeconds a queue takes on one message: none at all on FIFO."""
    return 0 if is_fifo_url(queue_url) else MAX_SQS_DELAY_SECONDS


def route(message: InboundMessage, settings: Settings) -> str | None:
    """The queue a replay goes to: its allowed source queue, else the main queue, else none."""
    source = message.dead_letter_source_arn
    if source and source in settings.allowed_source_queue_arns:
        return QueueArn.parse(source).url(settings.endpoint_url_sqs)
    return settings.main_queue_url


def decide(
    message: InboundMessage,
    settings: Settings,
    *,
    dlq_url: str | None,
    now: float,
    rng: RandomSource | None,
) -> Decision:
    """Decide one record (docs/design.md, 'What happens to one record'), with max-age.

    `rng` None draws the delay from `keyed_random(<message id>/<attempt>)`: a retried record
    (its write unconfirmed, or its delete lost to a crash) then decides exactly as before, so a
    FIFO destination drops the second copy by its deduplication id instead of taking a copy
    that went another way (replayed now where it was deferred). Message ids are random, so the
    delays of different messages are still independent draws.

    A record holding text that cannot be encoded (`unencodable`) fails alone, with why.

    `dlq_url` is None when the record's `eventSourceARN` names no queue (hand-made or sample
    events): only the decisions that write back to or hide in the DLQ need it, and they fail
    that one record instead of the whole batch.

    With `max_message_age_seconds` on, a record whose first failure (`first_failure_of`) is
    more than that many seconds before `now` is parked `max-age`, whatever else applies but an
    invalid count; the parked copy keeps its count. A record that tells no first failure
    (neither the attribute nor ApproximateFirstReceiveTimestamp) is not age-checked this time:
    its copy then carries `now` as its first failure, so the next round checks it, late by at
    most the time it spent before this replay. A copy with no free slot for the attribute
    falls back to SQS's first-receive time of each copy, which restarts the clock.
    """
    problem = unencodable(message)
    if problem is not None:  # nothing can be written for it, not even a park
        return Decision(Action.FAIL, problem=problem)
    count = attributes.parse_count(message.attributes.get(settings.count_attribute))
    if count is None:
        return _park(ParkReason.INVALID_COUNT)
    max_age = settings.max_message_age_seconds
    if not max_age:
        return _decide(message, count, settings, dlq_url=dlq_url, now=now, rng=rng)
    first_failure = first_failure_of(message)
    if first_failure is not None and now - first_failure > max_age:
        return _park(ParkReason.MAX_AGE, count)
    decision = _decide(message, count, settings, dlq_url=dlq_url, now=now, rng=rng)
    if decision.action not in (Action.REPLAY, Action.DEFER, Action.RELEASE):
        return decision
    return replace(
        decision, first_failure=math.floor(now) if first_failure is None else first_failure
    )


def first_failure_of(message: InboundMessage) -> int | None:
    """When the message first failed, in epoch seconds, as far as the record tells.

    The first-failure attribute a replayed copy carries, else SQS's first receive of this very
    copy (a later time, so the age read is a lower bound); None when the record has neither.
    """
    carried = message.attributes.get(FIRST_FAILURE_ATTRIBUTE)
    if carried is not None:
        value = attributes.parse_count(carried, _NOT_BEFORE_LIMIT)
        if value is not None:
            return value
    if message.first_received_ms is not None:
        return message.first_received_ms // 1000
    return None


def _decide(
    message: InboundMessage,
    count: int,
    settings: Settings,
    *,
    dlq_url: str | None,
    now: float,
    rng: RandomSource | None,
) -> Decision:
    """`decide` without the age policy, for a record whose count is valid."""
    destination = route(message, settings)
    if NOT_BEFORE_ATTRIBUTE in message.attributes:
        held_or_released = _waiting(message, destination, count, now, settings.backoff.cap_seconds)
        return _unless_dlq_unknown(held_or_released, dlq_url, message)
    attempt = count + 1
    if attempt > settings.max_attempts:
        return _park(ParkReason.MAX_ATTEMPTS, count)
    if destination is None:
        return _park(ParkReason.UNKNOWN_SOURCE, count)
    if is_fifo_url(destination) and message.message_group_id is None:
        return _park(ParkReason.MISSING_GROUP_ID, count)
    with_count = {**message.attributes, settings.count_attribute: attributes.number(attempt)}
    if not fits_limits(message.body, with_count):
        return _park(ParkReason.ATTRIBUTE_LIMIT, count)
    source = rng if rng is not None else keyed_random(f"{message.message_id}/{attempt}")
    delay = settings.backoff.draw(attempt, source)
    limit = destination_limit(destination)
    if delay <= limit:
        return Decision(Action.REPLAY, destination, attempt, delay, drawn_delay=delay)
    # Rounded down, so the wait is never longer than the drawn delay (and so the cap): a hold
    # computed on arrival then always reaches it, and a copy is released on its first arrival
    # after its time instead of being held again for the rounding second.
    not_before = math.floor(now) + delay
    waiting = {**with_count, NOT_BEFORE_ATTRIBUTE: attributes.number(not_before)}
    if not fits_limits(message.body, waiting):
        return Decision(Action.REPLAY, destination, attempt, limit, drawn_delay=delay)
    if dlq_url is None:
        return _dlq_unknown(message)
    dlq_delay = min(delay, destination_limit(dlq_url))
    return Decision(
        Action.DEFER, dlq_url, attempt, dlq_delay, not_before=not_before, drawn_delay=delay
    )


def _waiting(
    message: InboundMessage, destination: str | None, count: int, now: float, cap: int
) -> Decision:
    """A copy this function wrote back to wait: hold it until its time, then release it.

    The wait left is bounded by the cap: no copy of ours waits longer, and an absurd
    not-before (edited by hand, or written under a larger cap) must not keep a message hidden
    until the DLQ's retention period deletes it.
    """
    if destination is None:
        return _park(ParkReason.UNKNOWN_SOURCE, count)
    if is_fifo_url(destination) and message.message_group_id is None:
        return _park(ParkReason.MISSING_GROUP_ID, count)
    not_before = (
        attributes.parse_count(message.attributes[NOT_BEFORE_ATTRIBUTE], _NOT_BEFORE_LIMIT) or 0
    )
    remaining = min(max(0, not_before - math.floor(now)), cap)
    limit = destination_limit(destination)
    if remaining > limit:
        return Decision(
            Action.HOLD,
            attempt=count,
            delay=min(remaining, MAX_HOLD_SECONDS),
            not_before=not_before,
        )
    return Decision(Action.RELEASE, destination, count, delay=remaining)


def _unless_dlq_unknown(
    decision: Decision, dlq_url: str | None, message: InboundMessage
) -> Decision:
    """A hold hides the record in its DLQ, which must then be known."""
    if decision.action is Action.HOLD and dlq_url is None:
        return _dlq_unknown(message)
    return decision


def _dlq_unknown(message: InboundMessage) -> Decision:
    return Decision(
        Action.FAIL,
        problem=f"eventSourceARN {message.queue_arn!r} is not an SQS queue ARN, and this record "
        "must wait in its DLQ",
    )


def park_reason_of(body: str, values: Mapping[str, Attribute]) -> str | None:
    """Why an operator-queue message was parked, as the operator tools show and filter it.

    Its park-reason attribute when it has one. A message without one that has no room for it
    (ten attributes, or the 1 MiB limit) reads as `attribute-limit`: `build_copy` could not
    add the reason to it, which is always the case for an `attribute-limit` park and for any
    other park of a message already at the limit. None: parked by SQS's own safety net.
    """
    reason = values.get(PARK_REASON_ATTRIBUTE)
    if reason is not None:
        return reason.string_value
    with_reason = {**values, PARK_REASON_ATTRIBUTE: attributes.string(ParkReason.ATTRIBUTE_LIMIT)}
    return None if fits_limits(body, with_reason) else ParkReason.ATTRIBUTE_LIMIT.value


def _park(reason: ParkReason, count: int | None = None) -> Decision:
    return Decision(Action.PARK, attempt=count, reason=reason)


def park_instead(decision: Decision, reason: ParkReason) -> Decision:
    """The park that follows when a destination refused a copy for good."""
    if decision.action is Action.RELEASE:
        return _park(reason, decision.attempt)
    return _park(reason, (decision.attempt or 1) - 1)  # the copy keeps the count it came with


def build_copy(message: InboundMessage, decision: Decision, settings: Settings) -> OutboundMessage:
    """The message to write for a decision (not HOLD, which writes nothing)."""
    carried = {k: v for k, v in message.attributes.items() if k != NOT_BEFORE_ATTRIBUTE}
    if decision.action is Action.PARK:
        queue_url = settings.operator_queue_url
        if decision.reason is not None:
            with_reason = {**carried, PARK_REASON_ATTRIBUTE: attributes.string(decision.reason)}
            carried = with_reason if fits_limits(message.body, with_reason) else carried
        suffix = "park"
    else:
        if decision.destination is None or decision.attempt is None:
            raise ValueError(f"{decision.action} needs a destination and an attempt")
        queue_url = decision.destination
        carried[settings.count_attribute] = _count_attribute(message, decision, settings)
        if decision.not_before is not None:
            carried[NOT_BEFORE_ATTRIBUTE] = attributes.number(decision.not_before)
        if decision.first_failure is not None and FIRST_FAILURE_ATTRIBUTE not in carried:
            # Last in line for a slot: the count and the not-before marker come first.
            with_first = {
                **carried,
                FIRST_FAILURE_ATTRIBUTE: attributes.number(decision.first_failure),
            }
            carried = with_first if fits_limits(message.body, with_first) else carried
        if settings.write_origin:
            # After every marker: an origin is an aid, never worth a park or a clamped delay.
            with_origin = {**carried, ORIGIN_ATTRIBUTE: _origin(message, decision)}
            carried = with_origin if fits_limits(message.body, with_origin) else carried
        suffix = f"{decision.action.value}-{decision.attempt}"
    fifo = is_fifo_url(queue_url)
    group = message.message_group_id
    if fifo and group is None:
        group = FALLBACK_GROUP_ID
    return OutboundMessage(
        record_id=message.message_id,
        queue_url=queue_url,
        body=message.body,
        attributes=carried,
        delay_seconds=0 if fifo else decision.delay,
        message_group_id=group,
        # Deterministic, so SQS drops a send repeated after a crash within its 5-minute window.
        deduplication_id=f"{message.message_id}-{suffix}" if fifo else None,
        trace_header=message.trace_header,
    )


def _origin(message: InboundMessage, decision: Decision) -> Attribute:
    """`<first DLQ message id>/<attempt>`: the id part is kept from the copy's own origin, so
    it names the first failure (a standard redrive keeps the original message id) however
    many replays later."""
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
