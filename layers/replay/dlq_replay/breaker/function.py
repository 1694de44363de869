"""Lambda's outage breaker: its switch the function's own event source mapping, its probe an
EventBridge rule (rate 1 minute) enabled while the breaker is not closed (a function that
disabled its own mapping is no longer invoked by it), and its state in the partition `breaker`
of the stack's table: the state item (`x#state`, JSON and the version every write is
conditioned on) and a counter item per bucket of the window (`w#<bucket>`, expiring after a
day), sorted before it: one Query reads both."""

from __future__ import annotations

import functools
import json
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from botocore.exceptions import ClientError

from dlq_replay.breaker.breaker_state import BreakerState, Phase
from dlq_replay.breaker.controller import Breaker, Clock
from dlq_replay.breaker.evidence import (
    consumer_deleting,
    dlq_depth,
    dlq_time_left,
    main_queue_timing,
)
from dlq_replay.breaker.rule import BreakerPolicy, Counts
from dlq_replay.core.backoff import MAX_SQS_DELAY_SECONDS
from dlq_replay.core.queues import Arn
from dlq_replay.core.settings import Settings
from dlq_replay.core.settings_rules import TABLE_NAME_PATTERN, TABLE_NAME_RULE, resource_name
from dlq_replay.notify.sns import SnsClient
from dlq_replay.targets.dynamo_items import from_item, to_item

if TYPE_CHECKING:
    import boto3
    from aws_lambda_powertools.metrics import Metrics
    from mypy_boto3_lambda import LambdaClient
    from mypy_boto3_sqs import SQSClient

    from dlq_replay.core.log import Log


PARTITION = "breaker"
STATE_KEY = "x#state"
# Buckets of 5 s: a window fitted to a fast queue (tens of seconds) still has several, and the
# default five minutes reads 60 small items in one Query.
BUCKET_SECONDS = 5
BUCKET_TTL_SECONDS = 86_400
TABLE_VARIABLE = "OUTAGE_BREAKER_TABLE"  # the function's variable naming the table


def _bucket_key(bucket: int) -> str:
    return f"w#{bucket:012d}"


class DynamoBreakerStore:
    def __init__(self, dynamodb: Callable[[], Any], table: str) -> None:
        """`dynamodb` makes the client, at the first request."""
        self._make = dynamodb
        self._table = table

    @functools.cached_property
    def _db(self) -> Any:
        return self._make()

    def record(self, events: Sequence[tuple[float, Counts]]) -> None:
        """One UpdateItem per bucket of send time the batch touches."""
        buckets: dict[int, Counts] = {}
        for due, counts in events:
            bucket = math.floor(due / BUCKET_SECONDS)
            buckets[bucket] = buckets.get(bucket, Counts()) + counts
        for bucket, counts in sorted(buckets.items()):
            self._db.update_item(
                TableName=self._table,
                Key=to_item({"pk": PARTITION, "sk": _bucket_key(bucket)}),
                UpdateExpression="ADD replays :r, #ret :t, sent :s SET expires_at = :e",
                ExpressionAttributeNames={"#ret": "returns"},
                ExpressionAttributeValues=to_item(
                    {":r": counts.replays, ":t": counts.returns, ":s": counts.sent}
                    | {":e": bucket * BUCKET_SECONDS + BUCKET_TTL_SECONDS}
                ),
            )

    def read(
        self, now: float, policy: BreakerPolicy
    ) -> tuple[BreakerState, list[tuple[float, Counts]]]:
        """The state, and the window's counts by send time, to the bucket."""
        start = math.floor((now - policy.window_seconds) / BUCKET_SECONDS)
        items = self._query(_bucket_key(start))
        state = BreakerState()
        raw_buckets: list[tuple[int, Counts]] = []
        for values in map(from_item, items):
            key = values["sk"]
            if key == STATE_KEY:
                state = BreakerState.from_item(json.loads(values["state"]))
            elif key.startswith("w#"):
                counts = [int(values.get(name, 0)) for name in ("replays", "returns", "sent")]
                raw_buckets.append((int(key[2:]), Counts(*counts)))
        # A bucket stands for its last moment (now, for the one still filling): the probe's
        # first replays share a bucket with the moment it began, and must count for it.
        last = BUCKET_SECONDS - 0.001
        return state, [
            (min(now, bucket * BUCKET_SECONDS + last), counts) for bucket, counts in raw_buckets
        ]

    def load(self) -> BreakerState:
        key = to_item({"pk": PARTITION, "sk": STATE_KEY})
        found = self._db.get_item(TableName=self._table, Key=key, ConsistentRead=True)
        item = from_item(found.get("Item", {}))
        return BreakerState.from_item(json.loads(item["state"])) if item else BreakerState()

    def save(self, state: BreakerState, expected_version: int) -> bool:
        """Write `state` over the version it was decided on; False when another wrote first."""
        text = json.dumps(state.to_item(), sort_keys=True)
        item = to_item({"pk": PARTITION, "sk": STATE_KEY, "state": text, "version": state.version})
        try:
            self._db.put_item(
                TableName=self._table,
                Item=item,
                ConditionExpression="attribute_not_exists(version) OR version = :v",
                ExpressionAttributeValues=to_item({":v": expected_version}),
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                return False
            raise
        return True

    def _query(self, from_key: str) -> list[dict[str, Any]]:
        # Paged by hand: boto3's paginator loads DynamoDB's paginator model on its first use,
        # 11 ms of a cold start's first invocation (bench/bench_follow.py's cold start).
        items: list[dict[str, Any]] = []
        request: dict[str, Any] = {
            "TableName": self._table,
            "KeyConditionExpression": "pk = :p AND sk >= :from",
            "ExpressionAttributeValues": to_item({":p": PARTITION, ":from": from_key}),
            "ConsistentRead": True,
        }
        while True:
            response = self._db.query(**request)
            items.extend(response.get("Items", []))
            if not (last := response.get("LastEvaluatedKey")):
                return items
            request["ExclusiveStartKey"] = last


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
    clients: Callable[[str], Any],
    logger: Log,
    metrics: Metrics | None,
    sns: SnsClient | None,
    clock: Clock = time.time,
) -> Breaker | None:
    """The breaker when OUTAGE_BREAKER is on and the template gave it a table; else None. Its
    clients (`clients`, as `lazy_clients` makes them) are made when first needed."""
    function_name = env.get("AWS_LAMBDA_FUNCTION_NAME", "")
    table = resource_name(env, TABLE_VARIABLE, TABLE_NAME_PATTERN, TABLE_NAME_RULE)
    if not (settings.outage_breaker and table and function_name):
        return None
    rule_name = resource_name(
        env, RULE_VARIABLE, _RULE_NAME, "an EventBridge rule name (1-64 of A-Z a-z 0-9 _ - .)"
    )

    switch = MappingSwitch(lambda: clients("lambda"), function_name)

    def follow_rule(state: BreakerState) -> None:
        """The probe rule ticks the breaker: on only while it is open or half-open."""
        if state.phase is Phase.OPEN:
            clients("events").enable_rule(Name=rule_name)
        elif state.phase is Phase.CLOSED:
            clients("events").disable_rule(Name=rule_name)

    rule = follow_rule if rule_name else None

    def dlq_url() -> str:
        return Arn.queue(switch.mapping[1]).url(settings.endpoint_url_sqs)

    main = settings.main_queue_url
    return Breaker(
        DynamoBreakerStore(lambda: clients("dynamodb"), table),
        switch,
        logger=logger,
        count_attribute=settings.count_attribute,
        clock=clock,
        max_attempts=settings.max_attempts,
        time_left=dlq_time_left(
            sqs, lambda: clients("cloudwatch"), dlq_url, clock=clock, every=0.0
        ),
        depth=dlq_depth(sqs, dlq_url),
        timing=(lambda: main_queue_timing(sqs, main)) if main else None,
        delay_seconds=longest_delay(settings),
        deleting=consumer_deleting(lambda: clients("cloudwatch"), main, clock=clock)
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
