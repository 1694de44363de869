"""One batch of DLQ records in, every record accounted for out: "not done" (retried by the event
source) only when nothing was written for it or it was hidden again; whatever one record raises
is its own outcome, never the batch's."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar

from aws_lambda_powertools.metrics import MetricUnit

from dlq_replay.core.backoff import RandomSource
from dlq_replay.core.decision import Action, Decision, ParkReason
from dlq_replay.core.kinds import Recognised
from dlq_replay.core.log import Log
from dlq_replay.core.messages import InboundMessage
from dlq_replay.core.queues import Arn, is_fifo_arn
from dlq_replay.core.settings import Settings
from dlq_replay.core.text import error_text
from dlq_replay.engine.decide import WRITES, RecordCase, park_instead
from dlq_replay.engine.kinds import delivery_of, recognise
from dlq_replay.engine.report import Outcome, report
from dlq_replay.notify.sns import SnsClient, park_notice, publish_notices
from dlq_replay.sqs.sending import BatchSender, SendFailure, change_visibility

if TYPE_CHECKING:
    from aws_lambda_powertools.metrics import Metrics
    from mypy_boto3_sqs import SQSClient

    # Imported where a serverless record needs them, not on a DLQ_KIND=sqs cold start.
    from dlq_replay.targets.deliverer import Deliverer
    from dlq_replay.targets.ledger import Invocation, InvocationLedger

_T = TypeVar("_T")


class Lookup:
    """What the replay reads of a batch before deciding it (plain classes here: cold start)."""

    __slots__ = ("kinds", "known", "unread")

    def __init__(
        self,
        kinds: Mapping[str, Recognised],
        known: Mapping[str, Invocation] | None = None,
        unread: frozenset[str] = frozenset(),
    ) -> None:
        self.kinds, self.known, self.unread = kinds, known or {}, unread


Clock = Callable[[], float]


class Replayer:
    def __init__(
        self,
        settings: Settings,
        sqs: SQSClient,
        *,
        logger: Log,
        metrics: Metrics | None = None,
        clock: Clock = time.time,
        rng: RandomSource | None = None,
        on_outcome: Callable[[Outcome], None] | None = None,
        sns: SnsClient | None = None,
        deliverer: Deliverer | None = None,
        ledger: InvocationLedger | None = None,
    ) -> None:
        """`on_outcome` sees each record's outcome once its batch is reported (the demo's);
        `sns` sends park notices, `deliverer` and `ledger` serve the serverless kinds."""
        if settings.park_notification_topic_arn is not None and sns is None:
            raise ValueError("PARK_NOTIFICATION_TOPIC_ARN is set, but no SNS client was given")
        if settings.dlq_kind != "sqs" and (deliverer is None or ledger is None):
            raise ValueError(f"DLQ_KIND={settings.dlq_kind} needs a Deliverer and a ledger")
        self._deliverer, self._ledger = deliverer, ledger
        self._sns, self._settings, self._sqs = sns, settings, sqs
        self._sender = BatchSender(sqs, settings.send_concurrency)
        self._logger, self._metrics, self._clock = logger, metrics, clock
        self._rng = rng  # None: each record's delay is keyed by its id (see `RecordCase`)
        self._on_outcome = on_outcome

    def process(
        self, messages: Sequence[InboundMessage], lookup: Lookup | None = None
    ) -> dict[str, Outcome]:
        """One outcome per message id, in the batch's order (`lookup`: `look_up`'s, or read)."""
        if lookup is None:
            lookup = self.look_up(messages)
        outcomes: dict[str, Outcome] = {}
        blocked_groups: set[str] = set()
        for round_ in _rounds(messages):
            skipped = [m for m in round_ if m.message_group_id in blocked_groups]
            outcomes.update((m.message_id, Outcome(m, Decision(Action.SKIP))) for m in skipped)
            ready = [m for m in round_ if m.message_group_id not in blocked_groups]
            for outcome in self._process_round(ready, lookup):
                outcomes[outcome.message.message_id] = outcome
                group = outcome.message.message_group_id
                if group and not outcome.done and is_fifo_arn(outcome.message.queue_arn):
                    blocked_groups.add(group)
        ordered = {m.message_id: outcomes[m.message_id] for m in messages}
        report(ordered.values(), self._settings, self._logger, self._metrics)
        self._notify(ordered.values())
        if self._on_outcome is not None:
            for outcome in ordered.values():
                self._on_outcome(outcome)
        return ordered

    def _notify(self, outcomes: Iterable[Outcome]) -> None:
        """One SNS notice per park written; a failed one is logged and counted, never a failure."""
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

    def _process_round(self, messages: Sequence[InboundMessage], lookup: Lookup) -> list[Outcome]:
        """Decide each record, then write: waiting copies hidden, serverless records delivered,
        copies sent, parks last (a permanent refusal among them)."""
        now = self._clock()
        dlq_urls = {arn: self._dlq_url(arn) for arn in {m.queue_arn for m in messages}}
        cases = [self._case(m, lookup, dlq_urls[m.queue_arn], now) for m in messages]
        self._hold([c for c in cases if c.decision.action is Action.HOLD])
        self._deliver(
            [c for c in cases if not c.strategy.delivers_a_copy and c.decision.action in _DELIVERS],
            now,
        )
        # What a copy is written for: any write of an SQS record; a serverless record's own
        # only when it waits (a delivery its target refused, or a long delay).
        for case, failure in self._send(
            c
            for c in cases
            if c.decision.action in WRITES
            and (c.strategy.delivers_a_copy or c.decision.action is Action.DEFER)
        ):
            if failure.permanent:
                case.decision = park_instead(case.decision, ParkReason.REJECTED)
                self._logger.warning(
                    "destination refused the copy; parking it",
                    extra={
                        "message_id": case.message.message_id,
                        "code": failure.code,
                        "error": failure.message,
                    },
                )
            else:
                case.failure = failure
        for case, failure in self._send(c for c in cases if c.decision.action is Action.PARK):
            case.failure = failure
        return [
            Outcome(c.message, c.decision, c.failure, c.recognised, c.refused_attempt)
            for c in cases
        ]

    def _case(
        self, message: InboundMessage, lookup: Lookup, dlq_url: str | None, now: float
    ) -> RecordCase:
        known = lookup.known.get(message.message_id)
        case = RecordCase(
            *(message, self._settings, dlq_url, now, self._rng),
            recognised=lookup.kinds[message.message_id],
            ledger_count=known.count if known else None,
        )
        try:
            case.decision = _UNREAD if message.message_id in lookup.unread else case.decide()
        except Exception as error:  # one record's fault, never the batch's
            case.decision = _failed("deciding", error)
        return case

    def _send(self, cases: Iterable[RecordCase]) -> list[tuple[RecordCase, SendFailure]]:
        """Write each decision's copy (one that cannot be built fails alone); the failed writes."""
        by_id: dict[str, RecordCase] = {}
        copies = []
        for case in cases:
            try:
                copies.append(
                    case.strategy.copy(case.message, case.recognised, case.decision, self._settings)
                )
                by_id[case.message.message_id] = case
            except Exception as error:  # one record's fault, never the batch's
                case.decision = _failed("building its copy", error)
        return [(by_id[rid], failure) for rid, failure in self._sender.send(copies).items()]

    def look_up(self, messages: Sequence[InboundMessage]) -> Lookup:
        """Each record's kind, and the ledger's invocations for the Lambda records that carry
        no count of ours; a record whose id the ledger could not read waits (`_UNREAD`)."""
        targets, accepted = self._settings.replay_target_arns, self._settings.accepted_kinds
        kinds = {m.message_id: recognise(m, targets, accepted) for m in messages}
        ids: dict[str, list[str]] = {}
        for m in messages:
            request_id = kinds[m.message_id].request_id
            if request_id and self._settings.count_attribute not in m.attributes:
                ids.setdefault(request_id, []).append(m.message_id)
        if self._ledger is None or not ids:
            return Lookup(kinds)
        from dlq_replay.targets.ledger import LedgerError

        unread: tuple[str, ...] = ()
        try:
            found = self._ledger.invocations(ids)
        except Exception as error:  # a ledger answering nonsense: its records wait, alone
            self._logger.error(
                "invocation ledger not read; its records wait", extra={"error": str(error)}
            )
            found = error.found if isinstance(error, LedgerError) else {}
            unread = error.request_ids if isinstance(error, LedgerError) else tuple(ids)
        return Lookup(
            kinds,
            known={mid: found[rid] for rid, mids in ids.items() if rid in found for mid in mids},
            unread=frozenset(mid for rid in unread for mid in ids.get(rid, ())),
        )

    def _deliver(self, cases: Sequence[RecordCase], now: float) -> None:
        """Deliver the records due: a refusal becomes the next attempt's waiting copy (or a
        park); an invocation Lambda accepted is recorded against its request id."""
        if not cases:
            return
        if self._deliverer is None:
            raise ValueError("a record of a serverless kind needs a Deliverer")
        from dlq_replay.targets.delivery import Refused

        deliveries = [
            delivery_of(
                c.message, c.recognised, c.decision.destination or "", str(c.decision.attempt)
            )
            for c in cases
        ]
        results = self._deliverer.deliver(deliveries)
        invoked: dict[str, int] = {}
        for case in cases:
            message_id, decision = case.message.message_id, case.decision
            result = results[message_id]
            if isinstance(result, Refused):
                case.refused_attempt = decision.attempt or 1
                error = error_text(f"{result.code}: {result.message}")
                reason = case.strategy.refusals.get(result.code)
                case.decision = case.after_refusal(decision, error=error, reason=reason)
                extra = {"message_id": message_id, "target": decision.destination, "error": error}
                self._logger.warning("target refused the delivery", extra=extra)
                if self._metrics is not None:
                    self._metrics.add_metric("DeliveriesRefused", MetricUnit.Count, 1)
            elif result.request_id is not None:
                invoked[result.request_id] = decision.attempt or 0
        if invoked and self._ledger is not None:
            try:
                self._ledger.record(invoked, now=now)
            except Exception as error:
                # Delivered all the same: if such an invocation fails and returns, its count
                # starts again at 0 (logged and counted, for the alarm to see).
                self._logger.error("invocation ledger not written", extra={"error": str(error)})
                if self._metrics is not None:
                    self._metrics.add_metric("LedgerWriteFailures", MetricUnit.Count, 1)

    def _hold(self, cases: Sequence[RecordCase]) -> None:
        """Hide waiting copies until their time; a failed hold only means an earlier retry."""
        for dlq_url, queued in _grouped(cases, lambda c: c.dlq_url or "").items():
            changes = [(c.message.receipt_handle, c.decision.delay) for c in queued]
            refused = change_visibility(self._sqs, dlq_url, changes)
            for index, code in refused:
                self._logger.warning(
                    "could not hide a waiting copy; it returns after its visibility timeout",
                    extra={"message_id": queued[index].message.message_id, "code": code},
                )

    def _dlq_url(self, queue_arn: str) -> str | None:
        try:
            return Arn.queue(queue_arn).url(self._settings.endpoint_url_sqs)
        except ValueError:
            return None


_DELIVERS = (Action.REPLAY, Action.RELEASE)
# A record whose count the ledger may hold but could not tell: read as unknown, it would
# start again at 0, so it waits.
_UNREAD = Decision(Action.FAIL, problem="invocation ledger not read")


def _failed(step: str, error: Exception) -> Decision:
    return Decision(Action.FAIL, problem=f"{step} raised {type(error).__name__}: {error}"[:500])


def _rounds(messages: Sequence[InboundMessage]) -> Iterator[list[InboundMessage]]:
    """Standard queues: the whole batch at once. FIFO: the n-th record of every group per
    round, so a record is attempted only once the one before it in its group is done."""
    if not any(is_fifo_arn(m.queue_arn) for m in messages):
        yield list(messages)
        return
    by_group = _grouped(messages, lambda m: m.message_group_id or m.message_id)
    depth = max(len(group) for group in by_group.values())
    for index in range(depth):
        yield [group[index] for group in by_group.values() if index < len(group)]


def _grouped(items: Sequence[_T], key: Callable[[_T], str]) -> dict[str, list[_T]]:
    groups: dict[str, list[_T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups
