"""Lambda's breaker in the partition `breaker` of the stack's table: the state item (`x#state`,
JSON and the version every write is conditioned on) and a counter item per bucket of the window
(`w#<bucket>`, expiring after a day), sorted before it: one Query reads both."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Sequence
from typing import Any

from botocore.exceptions import ClientError

from dlq_replay.breaker.breaker_state import BreakerState
from dlq_replay.breaker.rule import BreakerPolicy, Counts
from dlq_replay.targets.dynamo_items import from_item, to_item

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
