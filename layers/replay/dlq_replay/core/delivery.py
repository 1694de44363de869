"""What to do with a record a serverless service wrote: deliver, wait in the DLQ, hold or park.

Pure, like core/decision.py, whose actions and copies it shares. What differs from an SQS
record (docs/design.md, 'Every serverless dead-letter queue'):
- the target is an ARN the record names (or, for a function's own DLQ, the one function
  configured), and it must be in REPLAY_TARGET_ARNS;
- no target takes a delay, so every delay is a wait in the DLQ: a copy written back with
  `dlq-replay-not-before`, delivered when due (RELEASE);
- a delivery carries no attributes, so the count lives on the waiting copy, and, once Lambda
  accepted an invocation, in the ledger under the request id it returned (the caller looks it
  up: `ledger_count`);
- a refused delivery is not a park: the record waits for its next attempt (`after_refusal`).
"""

from __future__ import annotations

import math

from dlq_replay.core import attributes
from dlq_replay.core.attributes import NOT_BEFORE_ATTRIBUTE, PARK_ERROR_ATTRIBUTE, Attribute
from dlq_replay.core.backoff import MAX_SQS_DELAY_SECONDS, RandomSource, keyed_random
from dlq_replay.core.decision import (
    MAX_HOLD_SECONDS,
    Action,
    Decision,
    ParkReason,
    build_copy,
    first_failure_of,
)
from dlq_replay.core.failure import PARK_DETAIL_MAX_CHARS
from dlq_replay.core.kinds import (
    KIND_ATTRIBUTE,
    TARGET_ATTRIBUTE,
    Recognised,
    TargetService,
    target_allowed,
    target_service,
)
from dlq_replay.core.messages import InboundMessage, OutboundMessage, fits_limits, unencodable
from dlq_replay.core.settings import Settings
from dlq_replay.core.text import clip, one_line, sqs_text

# `dlq-replay-not-before` holds epoch seconds.
_NOT_BEFORE_LIMIT = 10**12


def decide_delivery(
    message: InboundMessage,
    recognised: Recognised,
    settings: Settings,
    *,
    dlq_url: str | None,
    now: float,
    rng: RandomSource | None,
    ledger_count: int | None = None,
) -> Decision:
    """Decide one record of a serverless kind (`recognised.kind` is not sqs).

    The count is our attribute on a copy we wrote, else `ledger_count` (the attempt whose
    invocation came back), else 0. REPLAY and RELEASE name the target ARN as destination;
    DEFER names the DLQ.
    """
    problem = unencodable(message)
    if problem is not None:
        return Decision(Action.FAIL, problem=problem)
    carried = message.attributes.get(settings.count_attribute)
    count = attributes.parse_count(carried) if carried is not None else ledger_count or 0
    if count is None:
        return _park(ParkReason.INVALID_COUNT, None, recognised)
    if recognised.kind not in settings.accepted_kinds:
        return _park(ParkReason.UNEXPECTED_KIND, count, recognised)
    max_age = settings.max_message_age_seconds
    first_failure = first_failure_of(message) if max_age else None
    if first_failure is not None and now - first_failure > max_age:
        return _park(ParkReason.MAX_AGE, count, recognised)
    refusal = target_refusal(recognised.target_arn, settings.replay_target_arns)
    if refusal is not None or recognised.target_arn is None:
        return _park(refusal or ParkReason.UNKNOWN_TARGET, count, recognised)
    target = recognised.target_arn
    if NOT_BEFORE_ATTRIBUTE in message.attributes:
        return _waiting(message, target, count, settings, now=now, dlq_url=dlq_url)
    attempt = count + 1
    if attempt > settings.max_attempts:
        return _park(ParkReason.MAX_ATTEMPTS, count, recognised)
    return _next_attempt(message, target, attempt, settings, dlq_url=dlq_url, now=now, rng=rng)


def target_refusal(target: str | None, allowed: frozenset[str]) -> ParkReason | None:
    """Why a record may not be delivered to `target` (None: it may): no target named, a
    service the replay does not deliver to, or an ARN outside the allowed list. The replay
    parks for it; `redrive --to source` leaves the record in place for it."""
    if target is None:
        return ParkReason.UNKNOWN_TARGET
    if target_service(target) is TargetService.OTHER:
        return ParkReason.UNSUPPORTED_TARGET
    if not target_allowed(target, allowed):
        return ParkReason.TARGET_NOT_ALLOWED
    return None


def after_refusal(
    message: InboundMessage,
    decision: Decision,
    settings: Settings,
    *,
    error: str,
    dlq_url: str | None,
    now: float,
    rng: RandomSource | None,
) -> Decision:
    """The target refused delivery `decision.attempt` at once (throttled, missing, denied):
    the record waits in the DLQ for the next attempt, or is parked `max-attempts` with the
    service's error when that was the last."""
    refused = decision.attempt or 1
    if refused >= settings.max_attempts or decision.destination is None:
        return Decision(Action.PARK, attempt=refused, reason=ParkReason.MAX_ATTEMPTS, error=error)
    return _next_attempt(
        message,
        decision.destination,
        refused + 1,
        settings,
        dlq_url=dlq_url,
        now=now,
        rng=rng,
        at_once=False,
    )


def _next_attempt(
    message: InboundMessage,
    target: str,
    attempt: int,
    settings: Settings,
    *,
    dlq_url: str | None,
    now: float,
    rng: RandomSource | None,
    at_once: bool = True,
) -> Decision:
    """Attempt `attempt`: delivered now when its drawn delay is 0 (and `at_once`), else a
    copy that waits in the DLQ until then. A copy with no slot for its markers is delivered
    now instead (the delay clamped to 0, as a copy to SQS is clamped to what SQS takes)."""
    source = rng if rng is not None else keyed_random(f"{message.message_id}/{attempt}")
    delay = settings.backoff.draw(attempt, source)
    if delay == 0 and at_once:
        return Decision(Action.REPLAY, target, attempt, 0, drawn_delay=0)
    not_before = math.floor(now) + delay
    waiting = {
        **message.attributes,
        settings.count_attribute: attributes.number(attempt),
        NOT_BEFORE_ATTRIBUTE: attributes.number(not_before),
    }
    if not fits_limits(message.body, waiting):
        if at_once:
            return Decision(Action.REPLAY, target, attempt, 0, drawn_delay=delay)
        return Decision(Action.PARK, attempt=attempt - 1, reason=ParkReason.ATTRIBUTE_LIMIT)
    if dlq_url is None:
        return _dlq_unknown(message)
    return Decision(
        Action.DEFER,
        dlq_url,
        attempt,
        min(delay, MAX_SQS_DELAY_SECONDS),
        not_before=not_before,
        drawn_delay=delay,
    )


def _waiting(
    message: InboundMessage,
    target: str,
    count: int,
    settings: Settings,
    *,
    now: float,
    dlq_url: str | None,
) -> Decision:
    """A copy of ours waiting in the DLQ: hidden again until its time, then delivered with the
    count it carries. The wait left is bounded by the cap, as for an SQS record."""
    not_before = (
        attributes.parse_count(message.attributes[NOT_BEFORE_ATTRIBUTE], _NOT_BEFORE_LIMIT) or 0
    )
    remaining = min(max(0, not_before - math.floor(now)), settings.backoff.cap_seconds)
    if remaining == 0:
        return Decision(Action.RELEASE, target, count)
    if dlq_url is None:
        return _dlq_unknown(message)
    return Decision(
        Action.HOLD,
        attempt=count,
        delay=min(remaining, MAX_HOLD_SECONDS),
        not_before=not_before,
    )


def _dlq_unknown(message: InboundMessage) -> Decision:
    return Decision(
        Action.FAIL,
        problem=f"eventSourceARN {message.queue_arn!r} is not an SQS queue ARN, and this "
        "record must wait in its DLQ",
    )


def _park(reason: ParkReason, count: int | None, recognised: Recognised) -> Decision:
    return Decision(
        Action.PARK, attempt=count, reason=reason, error=service_error(recognised) or None
    )


def service_error(recognised: Recognised) -> str:
    """The service's error the record carries, as `dlq-replay-error` holds one: one line,
    "<code>: <message>", cut to the consumer toolkit's length."""
    code, text = recognised.error_code, recognised.error_message
    joined = f"{code}: {text}" if code and text and text != code else code or text or ""
    return error_text(joined)


def error_text(text: str) -> str:
    """One line, escaped for SQS, cut to PARK_DETAIL_MAX_CHARS."""
    return clip(sqs_text(one_line(text)), PARK_DETAIL_MAX_CHARS)


def build_kind_copy(
    message: InboundMessage, recognised: Recognised, decision: Decision, settings: Settings
) -> OutboundMessage:
    """The copy a DEFER or PARK writes: `build_copy`'s, then where a slot is free, in this
    order: a parked count the record did not carry, the kind, the error of a park and the
    target. The service's own attributes stay."""
    copy = build_copy(message, decision, settings)
    marked: dict[str, Attribute] = dict(copy.attributes)
    parked = decision.action is Action.PARK
    extras: list[tuple[str, Attribute | None]] = [
        # A count read from the ledger is on no attribute yet: the parked copy shows it.
        (
            settings.count_attribute,
            attributes.number(decision.attempt)
            if parked and decision.attempt is not None and settings.count_attribute not in marked
            else None,
        ),
        (KIND_ATTRIBUTE, attributes.string(recognised.kind.value)),
        (
            PARK_ERROR_ATTRIBUTE,
            attributes.string(decision.error) if parked and decision.error else None,
        ),
        (
            TARGET_ATTRIBUTE,
            attributes.string(recognised.target_arn) if recognised.target_arn else None,
        ),
    ]
    for name, value in extras:
        if value is None:
            continue
        with_extra = {**marked, name: value}
        if fits_limits(message.body, with_extra):
            marked = with_extra
    return OutboundMessage(
        record_id=copy.record_id,
        queue_url=copy.queue_url,
        body=copy.body,
        attributes=marked,
        delay_seconds=copy.delay_seconds,
        message_group_id=copy.message_group_id,
        deduplication_id=copy.deduplication_id,
        trace_header=copy.trace_header,
    )
