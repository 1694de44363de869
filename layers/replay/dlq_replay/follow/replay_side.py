"""The replay's side of following (Lambda and `dlq-replay worker`): after each batch, one
write of the recovery tally and the returns of copies an operator move sent.

The recovery tally of one invocation counts only the records that are DONE (deleted from the
DLQ); a record not done comes again and is counted then. With c the record's replay count
(the count attribute, parsed as the replay parses it; absent: the ledger's count for a
serverless record, else 0; malformed: the record is not counted at all):

- REPLAY: arrived(c) (attempt c failed) and sent(n), n the attempt its copy carries;
- DEFER: arrived(c) only; its copy waits in the DLQ and is counted as sent when released;
- RELEASE: sent(n), n the count the waiting copy carries; never an arrival;
- PARK: arrived(c) and parked(c);
- HOLD, SKIP, FAIL: nothing.

A record carrying a move's `dlq-replay-action` tag (the move's copy come back, or a replay
of it) is counted as that move's return below and not here: its count was kept from before
the move, so counting it under that attempt would say the attempt failed more often than the
replay sent it.

A record carrying `dlq-replay-not-before` is a copy of ours that waited in the DLQ, not a
return: whatever becomes of it, it is never an arrival (so a waiting copy parked at its
release counts parked(c) alone). The counts go to the DLQ's `recovery#<DLQ name>` hour.

A return of a move: every record of the batch, done or not, that carries a well-formed
`dlq-replay-action` tag and no not-before attribute; the FollowStore counts each key once
however often SQS delivers it. A notice it hands back goes to the alarm topic.

Neither write ever fails the batch or loses a record: a failed one is one log line and the
EMF metric `FollowWriteFailures`.
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
from dlq_replay.follow.recovery import RecoveryStore, RecoveryTally
from dlq_replay.follow.tag import FollowTag, read_tag

if TYPE_CHECKING:
    import boto3
    from aws_lambda_powertools.metrics import Metrics

    from dlq_replay.notify.sns import SnsClient


class Outcome(Protocol):
    """What the tally reads of the replayer's outcome (engine/report.py's, which follow/, a
    lower layer, does not import)."""

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
    """The tally of one batch's outcomes by the rule of the module's docstring."""
    tally = RecoveryTally()
    for outcome in outcomes:
        if not outcome.done:
            continue
        message, decision = outcome.message, outcome.decision
        if read_tag(message.attributes) is not None:
            continue  # a move's copy, or a replay of one: followed as that move's, not here
        carried = message.attributes.get(count_attribute)
        count: int | None
        if carried is not None:
            count = parse_count(carried)
        else:
            count = (known_counts or {}).get(message.message_id, 0)
        arrives = NOT_BEFORE_ATTRIBUTE not in message.attributes
        action, attempt = decision.action, decision.attempt
        if action in (Action.REPLAY, Action.RELEASE) and attempt is not None and attempt >= 1:
            tally.sent(attempt)
        if count is None or action not in (Action.REPLAY, Action.DEFER, Action.PARK):
            continue
        if arrives:
            tally.arrived(count)
        if action is Action.PARK:
            tally.parked(count)
    return tally


def returns_of(messages: Iterable[InboundMessage]) -> list[FollowTag]:
    """The returns among arriving records: a well-formed tag and no not-before attribute."""
    found = []
    for message in messages:
        if NOT_BEFORE_ATTRIBUTE in message.attributes:
            continue
        tag = read_tag(message.attributes)
        if tag is not None:
            found.append(tag)
    return found


def queue_name(queue_arn: str) -> str | None:
    """The DLQ's name from a record's eventSourceARN; None when it names no queue."""
    try:
        return Arn.queue(queue_arn).name
    except ValueError:
        return None


class ReplayFollow:
    """Called once per batch with what arrived and what became of it. `stores` makes the
    stores at the first write (no client or import at a cold start); `publish(texts)` sends
    notices and returns the ones it could not, None: notices are only logged."""

    def __init__(
        self,
        stores: Callable[[], tuple[RecoveryStore, FollowStore]],
        *,
        count_attribute: str,
        logger: Log,
        metrics: Metrics | None = None,
        publish: Callable[[Sequence[tuple[str, str]]], list[str]] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._stores = functools.cache(stores)
        self._count_attribute = count_attribute
        self._logger, self._metrics, self._publish, self._clock = logger, metrics, publish, clock

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
            name = queue_name(outcome.message.queue_arn)
            if name is not None:
                by_queue.setdefault(name, []).append(outcome)
        for name, queued in by_queue.items():
            tally = recovery_tally(queued, self._count_attribute, known_counts)
            self._emit(tally)
            if not tally.empty:
                self._guarded("recovery counts", functools.partial(self._add, name, tally, at))
        if tags:
            notices = self._guarded("returns", lambda: self._stores()[1].returns(tags, at))
            if notices:
                self._notify(notices)

    def _add(self, queue: str, tally: RecoveryTally, at: float) -> None:
        self._stores()[0].add(queue, tally, at)

    def _guarded(self, what: str, write: Callable[[], Any]) -> Any:
        """The write, or None after one log line and the failure metric: a batch is never
        failed, nor a record kept, for a count."""
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
        publish = self._publish
        if publish is None:
            return
        for problem in self._guarded("notices", lambda: publish(texts)) or []:
            self._logger.error(f"follow: notice not published: {problem}")

    def _emit(self, tally: RecoveryTally) -> None:
        """`CopiesSentByAttempt` and `ReturnedByAttempt` with an `attempt` dimension, and
        `FirstFailures`, for the counters that are not zero."""
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
    """FOLLOW_NOTICE_PERCENT's share; the minimum of 5 messages is fixed."""
    return FollowThreshold(share=settings.follow_notice_percent / 100)


def table_stores(
    dynamodb: Callable[[], Any], table: str, threshold: FollowThreshold
) -> Callable[[], tuple[RecoveryStore, FollowStore]]:
    """The stores of the stack's table; the client made when first called."""

    def make() -> tuple[RecoveryStore, FollowStore]:
        from dlq_replay.follow.tables import DynamoFollowStore, DynamoRecoveryStore

        client = dynamodb()
        return DynamoRecoveryStore(client, table), DynamoFollowStore(
            client, table, threshold=threshold
        )

    return make


def sns_publisher(
    sns: Callable[[], SnsClient], topic_arn: str
) -> Callable[[Sequence[tuple[str, str]]], list[str]]:
    """Publishes (action id, text) notices to `topic_arn`; the client made at the first."""

    def publish(texts: Sequence[tuple[str, str]]) -> list[str]:
        from dlq_replay.notify.sns import publish_texts

        return publish_texts(sns(), topic_arn, NOTICE_SUBJECT, texts)

    return publish


def lambda_follow(
    env: Mapping[str, str],
    settings: Settings,
    *,
    session: boto3.Session | None,
    logger: Log,
    metrics: Metrics | None,
    dynamodb: Callable[[], Any] | None = None,
) -> ReplayFollow | None:
    """The Lambda's follow-up when the template named its table (FOLLOW_TABLE), else None: no
    counting, no error. Clients are made at the first write; `dynamodb` shares the function's
    client (the breaker's: a second one costs the cold start some 4 ms)."""
    table = resource_name(env, FOLLOW_TABLE_VARIABLE, TABLE_NAME_PATTERN, TABLE_NAME_RULE)
    if table is None:
        return None

    def client(service: str, region: str | None = None) -> Any:
        if session is not None:
            return session.client(service, region_name=region)  # type: ignore[call-overload]
        import boto3 as _boto3

        return _boto3.client(service, region_name=region)  # type: ignore[call-overload]

    topic = settings.follow_notice_topic_arn
    publish = None
    if topic:
        match = SNS_TOPIC_ARN_PATTERN.fullmatch(topic)
        region = match["region"] if match else None
        publish = sns_publisher(functools.cache(lambda: client("sns", region)), topic)
    return ReplayFollow(
        table_stores(dynamodb or (lambda: client("dynamodb")), table, threshold_of(settings)),
        count_attribute=settings.count_attribute,
        logger=logger,
        metrics=metrics,
        publish=publish,
    )
