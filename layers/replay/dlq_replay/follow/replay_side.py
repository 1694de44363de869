"""The replay's side of following (Lambda and `dlq-replay worker`): after each batch, one
write of the recovery tally and one of the returns of copies an operator move sent.

The tally counts only records DONE (deleted from the DLQ). With c the record's replay count
(the count attribute; absent: the ledger's count, else 0; malformed: not counted at all):

- REPLAY: arrived(c) (attempt c failed) and sent(n), n the attempt its copy carries;
- DEFER: arrived(c) only; its copy waits in the DLQ and is counted as sent when released;
- RELEASE: sent(n), n the count the waiting copy carries; never an arrival;
- PARK: arrived(c) and parked(c);
- HOLD, SKIP, FAIL: nothing.

A record with a move's `dlq-replay-action` tag is not tallied (its count predates the move):
every record of the batch with a well-formed tag and no `dlq-replay-not-before` (a waiting copy
of ours, never an arrival) is a return of that move, each key counted once.

Neither write ever fails the batch: a failed one is a log line and `FollowWriteFailures`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from aws_lambda_powertools.metrics import MetricUnit, single_metric

from dlq_replay.core.attributes import NOT_BEFORE_ATTRIBUTE, parse_count
from dlq_replay.core.decision import Action, Decision
from dlq_replay.core.log import Log
from dlq_replay.core.messages import InboundMessage
from dlq_replay.core.queues import SNS_TOPIC_ARN_PATTERN, Arn
from dlq_replay.core.settings import Settings
from dlq_replay.core.settings_rules import TABLE_NAME_PATTERN, TABLE_NAME_RULE, resource_name
from dlq_replay.follow.moves import FollowStore, FollowThreshold, ReturnNotice, notice_text
from dlq_replay.follow.recovery import RecoveryTally
from dlq_replay.follow.tag import FollowTag, read_tag

if TYPE_CHECKING:
    import boto3
    from aws_lambda_powertools.metrics import Metrics

    from dlq_replay.notify.sns import SnsClient


class Outcome(Protocol):
    """What the tally reads of engine/report.py's outcome (a layer above)."""

    @property
    def message(self) -> InboundMessage: ...

    @property
    def decision(self) -> Decision: ...

    @property
    def done(self) -> bool: ...


FOLLOW_TABLE_VARIABLE = "FOLLOW_TABLE"
WRITE_FAILURES_METRIC = "FollowWriteFailures"
NOTICE_SUBJECT = "dlq-replay: a move's copies came back"


def recovery_tally(
    outcomes: Iterable[Outcome],
    count_attribute: str,
    known_counts: Mapping[str, int] | None = None,
) -> RecoveryTally:
    tally = RecoveryTally()
    for outcome in outcomes:
        if not outcome.done:
            continue
        message, decision = outcome.message, outcome.decision
        if read_tag(message.attributes) is not None:
            continue  # a move's copy, or a replay of one: followed as that move's, not here
        carried = message.attributes.get(count_attribute)
        known = (known_counts or {}).get(message.message_id, 0)
        count = known if carried is None else parse_count(carried)
        action, attempt = decision.action, decision.attempt
        if action in (Action.REPLAY, Action.RELEASE) and attempt is not None and attempt >= 1:
            tally.sent(attempt)
        if count is None or action not in (Action.REPLAY, Action.DEFER, Action.PARK):
            continue
        if NOT_BEFORE_ATTRIBUTE not in message.attributes:  # not a waiting copy released
            tally.arrived(count)
        if action is Action.PARK:
            tally.parked(count)
    return tally


def returns_of(messages: Iterable[InboundMessage]) -> list[FollowTag]:
    tags = (read_tag(m.attributes) for m in messages if NOT_BEFORE_ATTRIBUTE not in m.attributes)
    return [tag for tag in tags if tag is not None]


class ReplayFollow:
    """Called once per batch. `store` makes the store at the first write (not at a cold
    start); the notices go to `topic` by `sns`'s client (None: only logged)."""

    def __init__(
        self,
        store: Callable[[], FollowStore],
        *,
        count_attribute: str,
        logger: Log,
        metrics: Metrics | None = None,
        sns: Callable[[], SnsClient] | None = None,
        topic: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._store = functools.cache(store)
        self._count_attribute = count_attribute
        self._logger, self._metrics, self._clock = logger, metrics, clock
        self._sns = functools.cache(sns) if sns is not None and topic else None
        self._topic = topic or ""

    def __call__(
        self,
        received: Sequence[InboundMessage],
        outcomes: Mapping[str, Outcome],
        known_counts: Mapping[str, int] | None = None,
    ) -> None:
        at = self._clock()
        tags = returns_of(received)
        by_queue: dict[str, list[Outcome]] = {}
        for outcome in outcomes.values():
            try:
                name = Arn.queue(outcome.message.queue_arn).name
            except ValueError:
                continue
            by_queue.setdefault(name, []).append(outcome)
        for name, queued in by_queue.items():
            tally = recovery_tally(queued, self._count_attribute, known_counts)
            self._emit(tally)
            if not tally.empty:
                self._guarded("recovery counts", functools.partial(self._add, name, tally, at))
        if tags:
            notices = self._guarded("returns", lambda: self._store().returns(tags, at))
            if notices:
                self._notify(notices)

    def _add(self, queue: str, tally: RecoveryTally, at: float) -> None:
        self._store().add(queue, tally, at)

    def _guarded(self, what: str, write: Callable[[], Any]) -> Any:
        """The write, or None after one log line and the failure metric."""
        try:
            return write()
        except Exception as error:
            self._logger.error(
                f"follow: {what} not written; the batch goes on",
                extra={"error": f"{type(error).__name__}: {error}"[:500]},
            )
            if self._metrics is not None:
                self._metrics.add_metric(WRITE_FAILURES_METRIC, MetricUnit.Count, 1)
            return None

    def _notify(self, notices: Sequence[ReturnNotice]) -> None:
        texts = [(notice.action_id, notice_text(notice, None)) for notice in notices]
        for action_id, text in texts:
            self._logger.warning(text, extra={"action_id": action_id})
        sns = self._sns
        if sns is not None:
            for problem in self._guarded("notices", lambda: self._publish(sns(), texts)) or []:
                self._logger.error(f"follow: notice not published: {problem}")

    def _publish(self, sns: SnsClient, texts: Sequence[tuple[str, str]]) -> list[str]:
        from dlq_replay.notify.sns import publish_texts

        return publish_texts(sns, self._topic, NOTICE_SUBJECT, texts)

    def _emit(self, tally: RecoveryTally) -> None:
        """`CopiesSentByAttempt`, `ReturnedByAttempt` (by `attempt`) and `FirstFailures`."""
        if self._metrics is None or tally.empty:
            return
        names = {"sent": "CopiesSentByAttempt", "returned": "ReturnedByAttempt"}
        for counter, value in tally.to_counters().items():
            kind, _, attempt = counter.rpartition("_")
            dimensions = dict(self._metrics.default_dimensions)
            if counter == "failed_first":
                name = "FirstFailures"
            elif kind in names:
                name = names[kind]
                dimensions["attempt"] = attempt
            else:
                continue
            with single_metric(
                name=name,
                unit=MetricUnit.Count,
                value=value,
                namespace=self._metrics.namespace,
                default_dimensions=dimensions,
            ):
                pass


def threshold_of(settings: Settings) -> FollowThreshold:
    return FollowThreshold(share=settings.follow_notice_percent / 100)


def table_store(
    dynamodb: Callable[[], Any], table: str, threshold: FollowThreshold
) -> Callable[[], FollowStore]:
    def make() -> FollowStore:
        from dlq_replay.follow.tables import DynamoFollowStore

        return DynamoFollowStore(dynamodb(), table, threshold=threshold)

    return make


def lambda_follow(
    env: Mapping[str, str],
    settings: Settings,
    *,
    session: boto3.Session | None,
    logger: Log,
    metrics: Metrics | None,
    dynamodb: Callable[[], Any],
) -> ReplayFollow | None:
    """The Lambda's follow-up when the template named its table (FOLLOW_TABLE), else None.
    `dynamodb` is the breaker's client (a second one costs the cold start some 4 ms)."""
    table = resource_name(env, FOLLOW_TABLE_VARIABLE, TABLE_NAME_PATTERN, TABLE_NAME_RULE)
    if table is None:
        return None
    match = SNS_TOPIC_ARN_PATTERN.fullmatch(settings.follow_notice_topic_arn or "")
    region = match["region"] if match else None

    def sns() -> Any:
        if session is not None:
            return session.client("sns", region_name=region)
        import boto3 as _boto3

        return _boto3.client("sns", region_name=region)

    return ReplayFollow(
        table_store(dynamodb, table, threshold_of(settings)),
        count_attribute=settings.count_attribute,
        logger=logger,
        metrics=metrics,
        sns=sns,
        topic=settings.follow_notice_topic_arn,
    )
