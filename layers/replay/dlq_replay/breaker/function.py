"""Lambda's outage breaker: its state in DynamoDB, its switch the function's own event source
mapping, and its probe an EventBridge rule (rate 1 minute) enabled while the breaker is not
closed: a function that disabled its own mapping is no longer invoked by it."""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from dlq_replay.breaker.breaker_state import BreakerState, Phase
from dlq_replay.breaker.controller import Breaker, Clock
from dlq_replay.breaker.dynamo import TABLE_VARIABLE, DynamoBreakerStore
from dlq_replay.breaker.evidence import (
    consumer_deleting,
    dlq_depth,
    dlq_time_left,
    main_queue_timing,
)
from dlq_replay.core.backoff import MAX_SQS_DELAY_SECONDS
from dlq_replay.core.queues import Arn
from dlq_replay.core.settings import Settings
from dlq_replay.core.settings_rules import TABLE_NAME_PATTERN, TABLE_NAME_RULE, resource_name
from dlq_replay.notify.sns import SnsClient

if TYPE_CHECKING:
    import boto3
    from aws_lambda_powertools.metrics import Metrics
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_sqs import SQSClient

    from dlq_replay.core.log import Log


def is_probe_event(event: object) -> bool:
    """The probe rule's scheduled event (EventBridge's own shape), not an SQS batch."""
    return (
        isinstance(event, Mapping)
        and event.get("source") == "aws.events"
        and event.get("detail-type") == "Scheduled Event"
    )


class MappingSwitch:
    """The function's mapping on the DLQ: off to open, on to probe. Found by listing (the
    template cannot hand its UUID over without a dependency cycle)."""

    def __init__(self, lam: Callable[[], LambdaClient], function_name: str) -> None:
        self._make_lam = lam
        self._function = function_name

    @functools.cached_property
    def mapping(self) -> tuple[str, str]:
        """The mapping on the DLQ (the function's only SQS mapping): its UUID, the DLQ's ARN."""
        listed = self._make_lam().list_event_source_mappings(FunctionName=self._function)
        mappings = [
            m
            for m in listed.get("EventSourceMappings", [])
            if ":sqs:" in str(m.get("EventSourceArn", ""))
        ]
        if not mappings:
            raise LookupError(f"{self._function} has no event source mapping on the DLQ")
        return str(mappings[0]["UUID"]), str(mappings[0]["EventSourceArn"])

    def pause(self) -> None:
        self._make_lam().update_event_source_mapping(UUID=self.mapping[0], Enabled=False)

    def resume(self) -> None:
        self._make_lam().update_event_source_mapping(UUID=self.mapping[0], Enabled=True)

    def resumed_by_someone_else(self) -> bool:
        """On while open: an operator, the console or a stack update turned it on."""
        found = self._make_lam().get_event_source_mapping(UUID=self.mapping[0])
        return str(found.get("State", "")) in ("Enabled", "Enabling")


_RULE_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
RULE_VARIABLE = "OUTAGE_BREAKER_RULE"  # the probe rule's name (the template sets it)


def lambda_breaker(
    settings: Settings,
    *,
    env: Mapping[str, str],
    sqs: SQSClient,
    session: boto3.Session | None,
    logger: Log,
    metrics: Metrics | None,
    sns: SnsClient | None,
    clock: Clock = time.time,
    clients: Callable[[str], Any] | None = None,
) -> Breaker | None:
    """The breaker when OUTAGE_BREAKER is on and the template gave it a table; else None. Its
    clients (`clients`, else `lazy_clients(session)`) are made when first needed."""
    function_name = env.get("AWS_LAMBDA_FUNCTION_NAME", "")
    table = resource_name(env, TABLE_VARIABLE, TABLE_NAME_PATTERN, TABLE_NAME_RULE)
    if not (settings.outage_breaker and table and function_name):
        return None
    rule_name = resource_name(
        env, RULE_VARIABLE, _RULE_NAME, "an EventBridge rule name (1-64 of A-Z a-z 0-9 _ - .)"
    )

    client = clients or lazy_clients(session)
    switch = MappingSwitch(lambda: client("lambda"), function_name)

    def follow_rule(state: BreakerState) -> None:
        """The probe rule ticks the breaker: on only while it is open or half-open."""
        if state.phase is Phase.OPEN:
            client("events").enable_rule(Name=rule_name)
        elif state.phase is Phase.CLOSED:
            client("events").disable_rule(Name=rule_name)

    rule = follow_rule if rule_name else None

    def dlq_url() -> str:
        return Arn.queue(switch.mapping[1]).url(settings.endpoint_url_sqs)

    main = settings.main_queue_url
    return Breaker(
        DynamoBreakerStore(lambda: client("dynamodb"), table),
        switch,
        logger=logger,
        count_attribute=settings.count_attribute,
        clock=clock,
        max_attempts=settings.max_attempts,
        time_left=dlq_time_left(sqs, lambda: client("cloudwatch"), dlq_url, clock=clock, every=0.0),
        depth=dlq_depth(sqs, dlq_url),
        timing=(lambda: main_queue_timing(sqs, main)) if main else None,
        delay_seconds=longest_delay(settings),
        deleting=consumer_deleting(lambda: client("cloudwatch"), main, clock=clock)
        if main
        else None,
        metrics=metrics,
        sns=sns,
        topic_arn=settings.park_notification_topic_arn,
        source=function_name,
        on_change=rule,
        rule=rule,
    )


def lazy_clients(session: boto3.Session | None) -> Callable[[str], Any]:
    """One client per service, made when first asked for (a second costs a cold start ~4 ms)."""

    @functools.cache
    def client(service: str) -> Any:
        if session is not None:
            return session.client(service)  # type: ignore[call-overload]
        import boto3 as _boto3

        return _boto3.client(service)  # type: ignore[call-overload]

    return client


def longest_delay(settings: Settings) -> float:
    """The longest delay a replay is sent to its queue with (a longer wait is spent in the DLQ)."""
    return float(min(settings.backoff.cap_seconds, MAX_SQS_DELAY_SECONDS))
