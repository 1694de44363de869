"""One batch of DLQ records in, every record accounted for out.

The replayer decides each record (pure), writes the copies in batches, turns a destination's
permanent refusal into a park, and reports per record whether its copy was written. A record
is "not done" (a batch item failure, retried by the event source) only when nothing was
written for it, or when it is a waiting copy that was hidden again.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from dlq_replay.core.backoff import RandomSource
from dlq_replay.core.decision import (
    Action,
    Decision,
    ParkReason,
    build_copy,
    decide,
    park_instead,
)
from dlq_replay.core.log import Log
from dlq_replay.core.messages import InboundMessage
from dlq_replay.core.notices import park_notice
from dlq_replay.core.queues import QueueArn
from dlq_replay.core.settings import Settings
from dlq_replay.core.text import printable
from dlq_replay.notify.sns import SnsClient, publish_notices
from dlq_replay.sqs.sending import BatchSender, SendFailure, change_visibility

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics import Metrics
    from mypy_boto3_sqs import SQSClient

Clock = Callable[[], float]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one record."""

    message: InboundMessage
    decision: Decision
    failure: SendFailure | None = None

    @property
    def done(self) -> bool:
        """True when the record may be deleted from the DLQ: its copy is written somewhere."""
        return self.failure is None and self.decision.action not in _NOT_DONE


class Replayer:
    """Replays one batch at a time; holds no state between batches but its collaborators."""

    def __init__(
        self,
        settings: Settings,
        sqs: SQSClient,
        *,
        logger: Log,
        metrics: Metrics | None = None,
        clock: Clock = time.time,
        rng: RandomSource | None = None,
        sns: SnsClient | None = None,
        on_outcome: Callable[[Outcome], None] | None = None,
    ) -> None:
        """`sns` publishes the park notices; it is required when the settings name a topic.
        `on_outcome` sees each record's outcome once its batch is reported (the demo counts
        them); without it nothing is called."""
        if settings.park_notification_topic_arn is not None and sns is None:
            raise ValueError("PARK_NOTIFICATION_TOPIC_ARN is set, but no SNS client was given")
        self._settings = settings
        self._sns = sns
        self._sqs = sqs
        self._sender = BatchSender(sqs, settings.send_concurrency)
        self._logger = logger
        self._metrics = metrics
        self._clock = clock
        self._rng = rng  # None: each record's delay is keyed by its id (see `decide`)
        self._on_outcome = on_outcome

    def process(self, messages: Sequence[InboundMessage]) -> dict[str, Outcome]:
        """Handle a batch; the result has one outcome per message id, in the batch's order."""
        outcomes: dict[str, Outcome] = {}
        blocked_groups: set[str] = set()
        for round_ in _rounds(messages):
            ready = []
            for message in round_:
                if message.message_group_id in blocked_groups:
                    outcomes[message.message_id] = Outcome(message, Decision(Action.SKIP))
                else:
                    ready.append(message)
            for outcome in self._process_round(ready):
                outcomes[outcome.message.message_id] = outcome
                group = outcome.message.message_group_id
                if group and not outcome.done and _is_fifo(outcome.message):
                    blocked_groups.add(group)
        ordered = {m.message_id: outcomes[m.message_id] for m in messages}
        self._report(ordered.values())
        self._notify(ordered.values())
        if self._on_outcome is not None:
            for outcome in ordered.values():
                self._on_outcome(outcome)
        return ordered

    def _notify(self, outcomes: Iterable[Outcome]) -> None:
        """One SNS notice per park written, once per batch; a failed one is logged and counted,
        never a failed record: the message is parked all the same."""
        topic = self._settings.park_notification_topic_arn
        if topic is None or self._sns is None:
            return
        notices = [
            park_notice(o.message, o.decision, include_body=self._settings.log_message_body)
            for o in outcomes
            if o.decision.action is Action.PARK and o.failure is None
        ]
        if not notices:
            return
        for failure in publish_notices(self._sns, topic, notices):
            self._logger.warning(
                "park notice not published; the message is parked all the same",
                extra={
                    "message_id": failure.record_id,
                    "topic_arn": topic,
                    "code": failure.code,
                    "error": failure.message,
                },
            )
            if self._metrics is not None:
                self._metrics.add_metric("ParkNoticeFailures", MetricUnit.Count, 1)

    def _process_round(self, messages: Sequence[InboundMessage]) -> list[Outcome]:
        now = self._clock()
        dlq_urls = {arn: self._dlq_url(arn) for arn in {m.queue_arn for m in messages}}
        decisions = {
            m.message_id: decide(
                m, self._settings, dlq_url=dlq_urls[m.queue_arn], now=now, rng=self._rng
            )
            for m in messages
        }
        self._hold(
            [m for m in messages if decisions[m.message_id].action is Action.HOLD], decisions
        )
        failures: dict[str, SendFailure] = {}
        onward = [m for m in messages if decisions[m.message_id].action in _ONWARD]
        for record_id, failure in self._sender.send(
            [build_copy(m, decisions[m.message_id], self._settings) for m in onward]
        ).items():
            if failure.permanent:
                decisions[record_id] = park_instead(decisions[record_id], ParkReason.REJECTED)
                self._logger.warning(
                    "destination refused the copy; parking it",
                    extra={"message_id": record_id, "code": failure.code, "error": failure.message},
                )
            else:
                failures[record_id] = failure
        parks = [m for m in messages if decisions[m.message_id].action is Action.PARK]
        failures.update(
            self._sender.send(
                [build_copy(m, decisions[m.message_id], self._settings) for m in parks]
            )
        )
        return [Outcome(m, decisions[m.message_id], failures.get(m.message_id)) for m in messages]

    def _hold(self, messages: Sequence[InboundMessage], decisions: dict[str, Decision]) -> None:
        """Hide waiting copies until their time; a failed hold only means an earlier retry."""
        for queue_arn, queued in _by_queue(messages).items():
            refused = change_visibility(
                self._sqs,
                QueueArn.parse(queue_arn).url(self._settings.endpoint_url_sqs),
                [(m.receipt_handle, decisions[m.message_id].delay) for m in queued],
            )
            for index, code in refused:
                self._logger.warning(
                    "could not hide a waiting copy; it returns after its visibility timeout",
                    extra={"message_id": queued[index].message_id, "code": code},
                )

    def _dlq_url(self, queue_arn: str) -> str | None:
        """The URL of the record's DLQ; None when its eventSourceARN names no queue."""
        try:
            return QueueArn.parse(queue_arn).url(self._settings.endpoint_url_sqs)
        except ValueError:
            return None

    def _report(self, outcomes: Iterable[Outcome]) -> None:
        """A line of its own for each record an operator may have to act on (parked, not done),
        one line for the batch's routine outcomes (replay, defer, hold, release, skip), and the
        batch's metrics. A line costs more CPU than the rest of a record's handling in our
        code (bench/bench_end_to_end.py), so the routine records share one; their own lines are
        kept at DEBUG (the function's ApplicationLogLevel, the worker's --log-level)."""
        parked: Counter[str] = Counter()
        routine: list[dict[str, Any]] = []
        for outcome in outcomes:
            decision = outcome.decision
            fields = self._fields(outcome)
            if outcome.failure is not None or decision.action is Action.FAIL:
                self._logger.error("record not done", extra=fields)
            elif decision.action is Action.PARK:
                self._logger.info(f"record {_PAST[decision.action]}", extra=fields)
            else:
                self._logger.debug(f"record {_PAST[decision.action]}", extra=fields)
                routine.append(fields)
            if decision.clamped:
                self._logger.warning(
                    "no attribute slot for the long-delay marker: delay clamped", extra=fields
                )
            if outcome.message.dropped_attributes:
                self._logger.warning("attributes the copy cannot carry were dropped", extra=fields)
            self._count(outcome, parked)
        if routine:
            self._logger.info("batch outcomes", extra=routine_summary(routine))
        self._emit_parked(parked)

    def _fields(self, outcome: Outcome) -> dict[str, Any]:
        """The structured fields of one record's log line. Texts from the record go through
        `printable`: a hand-made event's lone surrogate must not cost the line."""
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
        if decision.reason is not None:
            fields["reason"] = decision.reason.value
        if decision.not_before is not None:
            fields["not_before"] = decision.not_before
        if decision.clamped:
            fields["drawn_delay_seconds"] = decision.drawn_delay
        if decision.problem is not None:
            fields["problem"] = decision.problem
        if message.dropped_attributes:
            fields["dropped_attributes"] = dict(message.dropped_attributes)
        if message.message_group_id:
            fields["message_group_id"] = printable(message.message_group_id)
        if self._settings.log_message_body:
            fields["body"] = printable(message.body)
        if outcome.failure is not None:
            fields.update(
                error_code=outcome.failure.code,
                error=outcome.failure.message,
                copy_written="unknown" if outcome.failure.unconfirmed else "no",
            )
        return fields

    def _count(self, outcome: Outcome, parked: Counter[str]) -> None:
        if self._metrics is None:
            return
        decision = outcome.decision
        if outcome.failure is not None:
            self._metrics.add_metric("SendFailures", MetricUnit.Count, 1)
            if outcome.failure.unconfirmed:
                self._metrics.add_metric("UnconfirmedSendFailures", MetricUnit.Count, 1)
        elif decision.action in _METRIC_BY_ACTION:
            self._metrics.add_metric(_METRIC_BY_ACTION[decision.action], MetricUnit.Count, 1)
        elif decision.reason is not None:
            parked[decision.reason.value] += 1
        if outcome.failure is None and decision.drawn_delay is not None:
            self._metrics.add_metric("ReplayDelay", MetricUnit.Seconds, decision.drawn_delay)

    def _emit_parked(self, parked: Counter[str]) -> None:
        """Parked counts carry a `reason` dimension, so they go out as their own EMF blobs."""
        if self._metrics is None:
            return
        for reason, count in parked.items():
            with single_metric(
                name="Parked",
                unit=MetricUnit.Count,
                value=count,
                namespace=self._metrics.namespace,
                default_dimensions={**self._metrics.default_dimensions, "reason": reason},
            ):
                pass


# What a routine record keeps in its batch's line: enough to follow it (where it went, with
# which count, back when); the rest is on its DEBUG line.
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
    """The fields of a batch's routine line: the count of each action, the destination when
    every record sent somewhere went to one queue (else each names its own), and each record,
    short. Held and skipped records send nothing and name no destination."""
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


_ONWARD = (Action.REPLAY, Action.DEFER, Action.RELEASE)
_NOT_DONE = (Action.HOLD, Action.SKIP, Action.FAIL)
_PAST = {
    Action.REPLAY: "replayed",
    Action.DEFER: "deferred",
    Action.HOLD: "held",
    Action.RELEASE: "released",
    Action.PARK: "parked",
    Action.SKIP: "skipped",
}
_METRIC_BY_ACTION = {
    Action.REPLAY: "Replayed",
    Action.RELEASE: "Released",
    Action.DEFER: "Deferred",
    Action.HOLD: "Held",
    Action.SKIP: "SkippedBehindGroup",
    Action.FAIL: "UnprocessableRecords",
}


def _is_fifo(message: InboundMessage) -> bool:
    return message.queue_arn.endswith(".fifo")


def _rounds(messages: Sequence[InboundMessage]) -> Iterator[list[InboundMessage]]:
    """Standard queues: the whole batch at once. FIFO: the n-th record of every group per round,
    so a record is only attempted once the one before it in its group is done."""
    if not any(_is_fifo(m) for m in messages):
        yield list(messages)
        return
    by_group: dict[str, list[InboundMessage]] = {}
    for m in messages:
        by_group.setdefault(m.message_group_id or m.message_id, []).append(m)
    depth = max(len(group) for group in by_group.values())
    for index in range(depth):
        yield [group[index] for group in by_group.values() if index < len(group)]


def _by_queue(messages: Sequence[InboundMessage]) -> dict[str, list[InboundMessage]]:
    by_queue: dict[str, list[InboundMessage]] = {}
    for m in messages:
        by_queue.setdefault(m.queue_arn, []).append(m)
    return by_queue
