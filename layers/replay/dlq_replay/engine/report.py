"""What became of each record of a batch, and how it is told: its log lines and metrics."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from dlq_replay.core.decision import Action, Decision
from dlq_replay.core.kinds import Recognised, RecordKind
from dlq_replay.core.log import Log
from dlq_replay.core.messages import InboundMessage
from dlq_replay.core.settings import Settings
from dlq_replay.core.text import printable
from dlq_replay.sqs.sending import SendFailure

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics import Metrics

_NOT_DONE = (Action.HOLD, Action.SKIP, Action.FAIL)


@dataclass(frozen=True, slots=True)
class Outcome:
    message: InboundMessage
    decision: Decision
    failure: SendFailure | None = None
    recognised: Recognised | None = None  # the record's kind and target
    refused_attempt: int | None = None  # the attempt its target refused (then: what followed)

    @property
    def done(self) -> bool:
        """The record may be deleted from the DLQ: its copy is written somewhere."""
        return self.failure is None and self.decision.action not in _NOT_DONE


def report(
    outcomes: Iterable[Outcome], settings: Settings, logger: Log, metrics: Metrics | None
) -> None:
    """A line of its own for each record an operator may have to act on, one shared by the
    routine rest (a line costs more CPU than a record's handling), and the metrics."""
    parked: Counter[str] = Counter()
    routine: list[dict[str, Any]] = []
    for outcome in outcomes:
        decision = outcome.decision
        fields = _fields(outcome, settings.log_message_body)
        if outcome.failure is not None or decision.action is Action.FAIL:
            logger.error("record not done", extra=fields)
        elif decision.action is Action.PARK:
            logger.info(f"record {_TOLD[decision.action][0]}", extra=fields)
        else:
            logger.debug(f"record {_TOLD[decision.action][0]}", extra=fields)
            routine.append(fields)
        if decision.clamped:
            logger.warning(
                "no attribute slot for the long-delay marker: delay clamped", extra=fields
            )
        if outcome.message.dropped_attributes:
            logger.warning("attributes the copy cannot carry were dropped", extra=fields)
        if metrics is not None:
            _count(metrics, outcome, parked)
    if routine:
        logger.info("batch outcomes", extra=routine_summary(routine))
    if metrics is None:
        return
    # Parked counts carry a `reason` dimension, so they go out as their own EMF blobs.
    for reason, count in parked.items():
        with single_metric(
            name="Parked",
            unit=MetricUnit.Count,
            value=count,
            namespace=metrics.namespace,
            default_dimensions={**metrics.default_dimensions, "reason": reason},
        ):
            pass


def _fields(outcome: Outcome, log_body: bool) -> dict[str, Any]:
    """One record's log fields (a lone surrogate in a text from the record made printable)."""
    decision = outcome.decision
    message = outcome.message
    fields: dict[str, Any] = {
        "message_id": printable(message.message_id),
        "outcome": decision.action.value if outcome.failure is None else "failed",
        "action": decision.action.value,
        "attempt": decision.attempt,
        "delay_seconds": decision.delay,
        "destination": decision.destination,
    }
    recognised = outcome.recognised
    if recognised is not None and recognised.kind is not RecordKind.SQS:
        fields.update(kind=recognised.kind.value, target=recognised.target_arn)
    optional = {
        "service_error": decision.error,
        "reason": decision.reason.value if decision.reason is not None else None,
        "not_before": decision.not_before,
        "drawn_delay_seconds": decision.drawn_delay if decision.clamped else None,
        "problem": decision.problem,
        "dropped_attributes": dict(message.dropped_attributes) or None,
        "message_group_id": printable(message.message_group_id or "") or None,
        "body": printable(message.body) if log_body else None,
    }
    fields.update((key, value) for key, value in optional.items() if value is not None)
    if outcome.failure is not None:
        fields.update(
            error_code=outcome.failure.code,
            error=outcome.failure.message,
            copy_written="unknown" if outcome.failure.unconfirmed else "no",
        )
    return fields


def _count(metrics: Metrics, outcome: Outcome, parked: Counter[str]) -> None:
    decision = outcome.decision
    if outcome.failure is not None:
        metrics.add_metric("SendFailures", MetricUnit.Count, 1)
        if outcome.failure.unconfirmed:
            metrics.add_metric("UnconfirmedSendFailures", MetricUnit.Count, 1)
    elif (metric := _TOLD[decision.action][1]) is not None:
        metrics.add_metric(metric, MetricUnit.Count, 1)
    elif decision.reason is not None:
        parked[decision.reason.value] += 1
    if outcome.failure is None and decision.drawn_delay is not None:
        metrics.add_metric("ReplayDelay", MetricUnit.Seconds, decision.drawn_delay)


# What a routine record keeps in its batch's line; the rest is on its DEBUG line.
_ROUTINE_KEYS = (
    "message_id",
    "action",
    "attempt",
    "delay_seconds",
    "not_before",
    "message_group_id",
    "body",
)


def routine_summary(routine: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The batch's routine line: each action's count, a shared destination, each record short."""
    destinations = {fields["destination"] for fields in routine} - {None}
    shared = len(destinations) <= 1
    keys = _ROUTINE_KEYS if shared else (*_ROUTINE_KEYS, "destination")
    summary: dict[str, Any] = {"counts": dict(Counter(fields["action"] for fields in routine))}
    if destinations and shared:
        summary["destination"] = destinations.pop()
    summary["records"] = [
        {key: fields[key] for key in keys if fields.get(key) is not None} for fields in routine
    ]
    return summary


# Each action's word on a record's line and its metric (a park is counted by its reason, a
# failure's line is "record not done").
_TOLD = {
    Action.REPLAY: ("replayed", "Replayed"),
    Action.DEFER: ("deferred", "Deferred"),
    Action.HOLD: ("held", "Held"),
    Action.RELEASE: ("released", "Released"),
    Action.PARK: ("parked", None),
    Action.SKIP: ("skipped", "SkippedBehindGroup"),
    Action.FAIL: (None, "UnprocessableRecords"),
}
