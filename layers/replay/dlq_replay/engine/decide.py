"""One decision for a DLQ record of any kind: count, limits, backoff, then replay, defer, hold,
release or park; what differs by kind is asked of its strategy (`engine.kinds.Kind`)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

from dlq_replay.core import attributes
from dlq_replay.core.attributes import NOT_BEFORE_ATTRIBUTE
from dlq_replay.core.backoff import KeyedRandom, RandomSource
from dlq_replay.core.decision import (
    MAX_HOLD_SECONDS,
    NOT_BEFORE_LIMIT,
    Action,
    Decision,
    ParkReason,
    first_failure_of,
    queue_delay_limit,
)
from dlq_replay.core.kinds import Recognised, RecordKind
from dlq_replay.core.messages import InboundMessage, fits_limits, unencodable
from dlq_replay.core.settings import Settings
from dlq_replay.engine.kinds import kind_of, recorded_error

if TYPE_CHECKING:
    from dlq_replay.sqs.sending import SendFailure

WRITES = (Action.REPLAY, Action.DEFER, Action.RELEASE)  # the actions that write a copy
UNDECIDED = Decision(Action.FAIL, problem="not decided")  # a case's, until decided


def park_instead(decision: Decision, reason: ParkReason) -> Decision:
    """The park after a destination's refusal for good, with the count the record came with."""
    count = decision.attempt if decision.action is Action.RELEASE else (decision.attempt or 1) - 1
    return Decision(Action.PARK, attempt=count, reason=reason)


class RecordCase:
    """One record through the replay. `rng` None keys the draw by `<message id>/<attempt>`, so a
    retried record decides as before. `dlq_url` None (an `eventSourceARN` that names no queue):
    a decision that writes back to or hides in the DLQ fails. (Not a dataclass: cold start.)"""

    __slots__ = (
        "decision",
        "dlq_url",
        "failure",
        "ledger_count",
        "message",
        "now",
        "recognised",
        "refused_attempt",
        "rng",
        "settings",
        "strategy",
    )

    def __init__(
        self,
        message: InboundMessage,
        settings: Settings,
        dlq_url: str | None,
        now: float,
        rng: RandomSource | None,
        *,
        recognised: Recognised | None = None,
        ledger_count: int | None = None,
    ) -> None:
        self.message, self.settings, self.dlq_url = message, settings, dlq_url
        self.now, self.rng, self.ledger_count = now, rng, ledger_count
        self.recognised = recognised or Recognised(RecordKind.SQS, payload=message.body)
        self.strategy = kind_of(self.recognised.kind)
        self.decision = UNDECIDED
        self.refused_attempt: int | None = None
        self.failure: SendFailure | None = None

    def decide(self) -> Decision:
        """The count is our attribute, else the ledger's, else 0; a copy of a record that tells
        no first failure carries `now` as its first."""
        message, settings, recognised = self.message, self.settings, self.recognised
        problem = unencodable(message)
        if problem is not None:  # nothing can be written for it, not even a park
            return Decision(Action.FAIL, problem=problem)
        carried = message.attributes.get(settings.count_attribute)
        count = attributes.parse_count(carried) if carried is not None else self.ledger_count or 0
        if count is None:
            return _park(ParkReason.INVALID_COUNT, None, recognised)
        if recognised.kind not in settings.accepted_kinds:
            return _park(ParkReason.UNEXPECTED_KIND, count, recognised)
        max_age = settings.max_message_age_seconds
        first_failure = first_failure_of(message) if max_age else None
        if first_failure is not None and self.now - first_failure > max_age:
            return _park(ParkReason.MAX_AGE, count, recognised)
        decision = self._decide(count)
        if not max_age or decision.action not in WRITES:
            return decision
        first_failure = math.floor(self.now) if first_failure is None else first_failure
        return replace(decision, first_failure=first_failure)

    def after_refusal(
        self, decision: Decision, *, error: str, reason: ParkReason | None = None
    ) -> Decision:
        """The target refused delivery `decision.attempt`: a refusal no retry can change
        (`reason`) parks now, another waits in the DLQ for the next attempt (or parks)."""
        refused = decision.attempt or 1
        if reason is None and refused >= self.settings.max_attempts:
            reason = ParkReason.MAX_ATTEMPTS
        if reason is not None or decision.destination is None:
            reason = reason or ParkReason.MAX_ATTEMPTS
            return Decision(Action.PARK, attempt=refused, reason=reason, error=error)
        return self.next_attempt(decision.destination, 0, refused + 1, at_once=False)

    def _decide(self, count: int) -> Decision:
        message, settings, strategy = self.message, self.settings, self.strategy
        destination = strategy.destination(message, self.recognised, settings)
        waiting = NOT_BEFORE_ATTRIBUTE in message.attributes
        attempt = count + 1
        if not waiting and attempt > settings.max_attempts:
            return _park(ParkReason.MAX_ATTEMPTS, count, self.recognised)
        if isinstance(destination, ParkReason):
            return _park(destination, count, self.recognised)
        if waiting:
            return self._waiting(destination, count)
        with_count = {**message.attributes, settings.count_attribute: attributes.number(attempt)}
        if strategy.delivers_a_copy and not fits_limits(message.body, with_count):
            return _park(ParkReason.ATTRIBUTE_LIMIT, count, self.recognised)
        return self.next_attempt(destination, strategy.delay_limit(destination), attempt)

    def next_attempt(
        self, destination: str, limit: int, attempt: int, *, at_once: bool = True
    ) -> Decision:
        """Attempt `attempt`: now when the drawn delay is at most `limit` (and `at_once`), else
        a copy that waits in the DLQ; with no slot for its markers, clamped to `limit` (or
        parked `attribute-limit` if not `at_once`)."""
        message = self.message
        key = f"{message.message_id}/{attempt}"
        source = self.rng if self.rng is not None else KeyedRandom(key)
        delay = self.settings.backoff.draw(attempt, source)
        if delay <= limit and at_once:
            return Decision(Action.REPLAY, destination, attempt, delay, drawn_delay=delay)
        # Rounded down: never longer than the drawn delay, and not held again for a second.
        not_before = math.floor(self.now) + delay
        waiting = {
            **message.attributes,
            self.settings.count_attribute: attributes.number(attempt),
            NOT_BEFORE_ATTRIBUTE: attributes.number(not_before),
        }
        if not fits_limits(message.body, waiting):
            if at_once:
                return Decision(Action.REPLAY, destination, attempt, limit, drawn_delay=delay)
            return Decision(Action.PARK, attempt=attempt - 1, reason=ParkReason.ATTRIBUTE_LIMIT)
        if self.dlq_url is None:
            return self._dlq_unknown()
        return Decision(
            Action.DEFER,
            self.dlq_url,
            attempt,
            min(delay, queue_delay_limit(self.dlq_url)),
            not_before=not_before,
            drawn_delay=delay,
        )

    def _waiting(self, destination: str, count: int) -> Decision:
        """A copy we wrote back to wait: held until its time, then released with its count. The
        wait is bounded by the cap: an absurd not-before must not hide it until retention ends."""
        marker = self.message.attributes[NOT_BEFORE_ATTRIBUTE]
        not_before = attributes.parse_count(marker, NOT_BEFORE_LIMIT) or 0
        cap = self.settings.backoff.cap_seconds
        remaining = min(max(0, not_before - math.floor(self.now)), cap)
        if remaining <= self.strategy.delay_limit(destination):
            return Decision(Action.RELEASE, destination, count, delay=remaining)
        if self.dlq_url is None:  # a hold hides the record in its DLQ, which must then be known
            return self._dlq_unknown()
        hidden = min(remaining, MAX_HOLD_SECONDS)
        return Decision(Action.HOLD, attempt=count, delay=hidden, not_before=not_before)

    def _dlq_unknown(self) -> Decision:
        return Decision(
            Action.FAIL,
            problem=f"eventSourceARN {self.message.queue_arn!r} is not an SQS queue ARN, and "
            "this record must wait in its DLQ",
        )


def _park(reason: ParkReason, count: int | None, recognised: Recognised) -> Decision:
    return Decision(
        Action.PARK, attempt=count, reason=reason, error=recorded_error(recognised) or None
    )
