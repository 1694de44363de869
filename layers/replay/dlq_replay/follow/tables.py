"""The follow-up counts as items of the stack's table (keys `pk`/`sk`, TTL `expires_at`),
part of docs/design.md's contract:

- `recovery#<queue name>` / `<hour, 2026-12-06T14>`: the replay's counters of that hour, one
  UpdateItem `ADD` per invocation; kept 15 days.
- `follow#<action id>` / `summary`: `started_at`, `window_seconds`, `command`, `sent`,
  `untracked`, `last_sent_at`, `sent_at` (the end of sending), `returned`, `last_return_at`,
  `notified` (when the notice was claimed).
- `follow#<action id>` / `keys#<0-f>`: the keys that came back (a String Set sharded by their
  sha1's first hex digit, so ~100k keys fit the 400 KB item limit) and their `returned` count,
  changed together in one conditional UpdateItem: each key counts once, and the shards' counts
  are the truth `follow` reads. Kept 90 days after the last write.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from decimal import Decimal
from typing import Any

from botocore.exceptions import ClientError

from dlq_replay.follow.moves import (
    FOLLOW_KEEP_SECONDS,
    FollowThreshold,
    MoveFollow,
    ReturnNotice,
    check_counts,
    keys_by_action,
    moment,
    move_of,
    notice_after,
    whole,
)
from dlq_replay.follow.recovery import (
    HOUR,
    RECOVERY_KEEP_SECONDS,
    RecoverySummary,
    RecoveryTally,
    hour_bucket,
    summarize,
)
from dlq_replay.follow.tag import FollowTag, valid_action_id
from dlq_replay.targets.dynamo_items import from_item, to_item

SUMMARY = "summary"
SHARDS = tuple(f"keys#{digit:x}" for digit in range(16))
KEYS_PER_READ = 100  # BatchGetItem's limit
KEYS_PER_WRITE = 100  # a `NOT contains(...)` each stays far below an expression's 4 KB
_CONDITION_FAILED = "ConditionalCheckFailedException"
_MOVE_FIELDS = (
    "pk", "sk", "sent", "untracked", "window_seconds", "sent_at", "returned", "last_return_at",
    "notified", "started_at", "command", "last_sent_at",
)  # fmt: skip


def shard_of(key: str) -> str:
    """The first hex digit of its sha1 (hashlib loads OpenSSL: not at the cold start)."""
    import hashlib

    return hashlib.sha1(key.encode(), usedforsecurity=False).hexdigest()[0]


def epoch(at: float) -> Decimal:
    """Epoch seconds as DynamoDB takes a number (the serializer refuses floats)."""
    return Decimal(repr(float(at)))


def _stamped(name: str, at: float) -> dict[str, Any]:
    """A time written to a move's item, which then stays 90 days from it."""
    return {name: epoch(at), "expires_at": int(at) + FOLLOW_KEEP_SECONDS}


def _update(
    dynamodb: Any,
    table: str,
    key: Mapping[str, str],
    *,
    add: Mapping[str, Any] = {},
    put: Mapping[str, Any] = {},
    condition: str | None = None,
    condition_values: Mapping[str, Any] = {},
    **extra: Any,
) -> dict[str, Any]:
    """One UpdateItem: `ADD` and `SET` of plain values, every name behind a placeholder
    (reserved words); `#keys` in `condition` names `keys`."""
    names: dict[str, str] = {"#keys": "keys"} if condition and "#keys" in condition else {}
    values: dict[str, Any] = dict(condition_values)
    clauses: list[str] = []
    for verb, pairs, form in (("ADD", add, "{} {}"), ("SET", put, "{} = {}")):
        parts = []
        for name, value in pairs.items():
            index = len(names)
            names[f"#n{index}"] = name
            values[f":v{index}"] = value
            parts.append(form.format(f"#n{index}", f":v{index}"))
        if parts:
            clauses.append(f"{verb} {', '.join(parts)}")
    request: dict[str, Any] = {
        "TableName": table,
        "Key": to_item(key),
        "UpdateExpression": " ".join(clauses),
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": to_item(values),
        **extra,
    }
    if condition:
        request["ConditionExpression"] = condition
    answer: dict[str, Any] = dynamodb.update_item(**request)
    return answer


def _failed_condition(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") == _CONDITION_FAILED


def _plain(items: Iterable[Any]) -> Iterator[dict[str, Any]]:
    """Items as plain values; foreign items that do not deserialize are skipped."""
    for item in items:
        try:
            yield from_item(item)
        except (TypeError, ValueError, KeyError, AttributeError):
            continue


def move_from_items(action_id: str, items: Iterable[Mapping[str, Any]]) -> MoveFollow | None:
    """The move from its summary and shards (whose counts are the returns), or None."""
    found = [values for values in items if values.get("sk") in (SUMMARY, *SHARDS)]
    if not found:
        return None
    summary = next((values for values in found if values["sk"] == SUMMARY), {})
    returned = sum(whole(values.get("returned")) for values in found if values["sk"] != SUMMARY)
    times = (moment(values.get("last_return_at")) for values in found)
    last_return = max((at for at in times if at is not None), default=None)
    return move_of(action_id, {**summary, "last_return_at": last_return}, returned)


class DynamoFollowStore:
    """The replay's recovery counts and the moves followed, in the stack's table."""

    def __init__(
        self,
        dynamodb: Any,  # a boto3 DynamoDB client
        table: str,
        *,
        threshold: FollowThreshold | None = None,
        now: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._dynamodb = dynamodb
        self.table = table
        self.where = f"DynamoDB table {table}"  # for people, as the audit's
        self.threshold = threshold or FollowThreshold()
        self._now, self._sleep = now, sleep

    def add(self, queue: str, tally: RecoveryTally, at: float) -> None:
        counters = tally.to_counters()
        if not counters:
            return
        hour = hour_bucket(at)
        expires = int(at // HOUR * HOUR) + RECOVERY_KEEP_SECONDS
        key = {"pk": f"recovery#{queue}", "sk": hour}
        _update(self._dynamodb, self.table, key, add=counters, put={"expires_at": expires})

    def window(
        self, queue: str, since: float, until: float, *, settled_before: float | None = None
    ) -> RecoverySummary:
        query: dict[str, Any] = {
            "TableName": self.table,
            "KeyConditionExpression": "pk = :p AND sk BETWEEN :a AND :b",
            "ExpressionAttributeValues": to_item(
                {":p": f"recovery#{queue}", ":a": hour_bucket(since), ":b": hour_bucket(until)}
            ),
        }
        pages = self._dynamodb.get_paginator("query").paginate(**query)
        items = _plain(item for page in pages for item in page.get("Items", []))
        return summarize(((item.get("sk"), item) for item in items), since, until, settled_before)

    def _write(self, action_id: str, **parts: Any) -> dict[str, Any]:
        if not valid_action_id(action_id):
            raise ValueError(f"not an action id: {action_id!r}")
        key = {"pk": f"follow#{action_id}", "sk": SUMMARY}
        return _update(self._dynamodb, self.table, key, **parts)

    def started(
        self, action_id: str, window_seconds: int, at: float, *, command: str | None = None
    ) -> None:
        put = {"action_id": action_id, "window_seconds": max(0, int(window_seconds))}
        put |= _stamped("started_at", at) | ({"command": command} if command else {})
        self._write(action_id, put=put)

    def sent(self, action_id: str, sent: int, untracked: int) -> None:
        check_counts(sent, untracked)
        put = _stamped("last_sent_at", self._now())
        self._write(action_id, add={"sent": sent, "untracked": untracked}, put=put)

    def finished(self, action_id: str, at: float) -> None:
        self._write(action_id, put=_stamped("sent_at", at))

    def returns(self, tags: Iterable[FollowTag], at: float) -> list[ReturnNotice]:
        notices: list[ReturnNotice] = []
        for action_id, keys in sorted(keys_by_action(tags).items()):
            shards: dict[str, list[str]] = {}
            for key in sorted(keys):
                shards.setdefault(shard_of(key), []).append(key)
            new = 0
            for shard, shard_keys in sorted(shards.items()):
                for start in range(0, len(shard_keys), KEYS_PER_WRITE):
                    chunk = shard_keys[start : start + KEYS_PER_WRITE]
                    new += self._add_keys(action_id, shard, chunk, at)
            notice = self._count(action_id, new, at) if new else None
            if notice is not None:
                notices.append(notice)
        return notices

    def _add_keys(self, action_id: str, shard: str, keys: list[str], at: float) -> int:
        """Adds the keys new to the shard in one conditional write (on a refusal, drops those
        now there and tries again); how many were new."""
        item_key = {"pk": f"follow#{action_id}", "sk": f"keys#{shard}"}
        pending = sorted(set(keys))
        for _ in range(len(pending) + 2):  # each refusal removes one key at least
            if not pending:
                return 0
            written = {f":k{i}": key for i, key in enumerate(pending)}
            condition = " AND ".join(f"NOT contains(#keys, {name})" for name in written)
            try:
                _update(
                    self._dynamodb,
                    self.table,
                    item_key,
                    add={"keys": set(pending), "returned": len(pending)},
                    put=_stamped("last_return_at", at),
                    condition=condition,
                    condition_values=written,
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
            except ClientError as error:
                if not _failed_condition(error):
                    raise
                present = self._present(item_key, error.response.get("Item"))
                pending = [key for key in pending if key not in present]
                continue
            return len(pending)
        raise RuntimeError(f"keys of {item_key['pk']} kept changing under the write")

    def _present(self, item_key: Mapping[str, str], item: Any) -> set[str]:
        """The shard's keys: from the refusal's copy of the item, else a consistent read."""
        if not isinstance(item, dict) or "keys" not in item:
            item = self._dynamodb.get_item(
                TableName=self.table,
                Key=to_item(item_key),
                ConsistentRead=True,
                ProjectionExpression="#keys",
                ExpressionAttributeNames={"#keys": "keys"},
            ).get("Item", {})
        keys = next(_plain([{"keys": item.get("keys")}]), {}).get("keys")
        return {key for key in keys if isinstance(key, str)} if isinstance(keys, set) else set()

    def _count(self, action_id: str, new: int, at: float) -> ReturnNotice | None:
        """Adds `new` returns to the summary; past the threshold, claims the notice with a
        conditional write (exactly one caller gets it)."""
        old = self._write(
            action_id,
            add={"returned": new},
            put=_stamped("last_return_at", at),
            ReturnValues="ALL_OLD",
        ).get("Attributes", {})
        values = next(_plain([old]), {})
        before = move_of(action_id, values, 0)
        notice = notice_after(before, whole(values.get("returned")) + new, self.threshold, at)
        if notice is None:
            return None
        try:
            self._write(
                action_id, put={"notified": epoch(at)}, condition="attribute_not_exists(notified)"
            )
        except ClientError as error:
            if _failed_condition(error):
                return None
            raise
        return notice

    def follow(self, action_id: str) -> MoveFollow | None:
        return self.follows([action_id]).get(action_id)

    def follows(self, action_ids: Iterable[str]) -> dict[str, MoveFollow]:
        """Summaries and shards by key (not a Query a move), without the key sets."""
        wanted = [a for a in dict.fromkeys(action_ids) if valid_action_id(a)]
        keys = [{"pk": f"follow#{a}", "sk": sk} for a in wanted for sk in (SUMMARY, *SHARDS)]
        names = {f"#f{i}": name for i, name in enumerate(_MOVE_FIELDS)}
        items: dict[str, list[dict[str, Any]]] = {}
        for start in range(0, len(keys), KEYS_PER_READ):
            chunk = [to_item(key) for key in keys[start : start + KEYS_PER_READ]]
            for values in self._batch_get(chunk, names):
                pk = values.get("pk")
                if isinstance(pk, str):
                    items.setdefault(pk.removeprefix("follow#"), []).append(values)
        found = {a: move_from_items(a, items.get(a, [])) for a in wanted}
        return {a: move for a, move in found.items() if move is not None}

    def _batch_get(self, keys: list[dict[str, Any]], names: dict[str, str]) -> list[Any]:
        """One BatchGetItem's items, unprocessed keys asked again after a doubling pause."""
        found: list[Any] = []
        pending, pause = keys, 0.05
        while pending:
            request = {
                "Keys": pending,
                "ProjectionExpression": ", ".join(names),
                "ExpressionAttributeNames": names,
                "ConsistentRead": True,
            }
            answer = self._dynamodb.batch_get_item(RequestItems={self.table: request})
            found.extend(_plain(answer.get("Responses", {}).get(self.table, [])))
            pending = answer.get("UnprocessedKeys", {}).get(self.table, {}).get("Keys", [])
            if pending:
                self._sleep(pause)
                pause = min(pause * 2, 2.0)
        return found
