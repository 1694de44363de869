"""The request-id ledger: a Lambda invocation that fails later comes back with only its request
id, so the replay records `request id -> attempt` (in the stack's table; the worker's in
memory). An id not read raises `LedgerError`: taken for unknown, its count would restart."""

from __future__ import annotations

import contextlib
import functools
import math
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.core.settings_rules import TABLE_NAME_PATTERN, TABLE_NAME_RULE, resource_name
from dlq_replay.targets.dynamo_items import from_item, to_item

LEDGER_TABLE_VARIABLE = "INVOCATION_LEDGER_TABLE"
KEY_PREFIX = "invocation#"
SORT_KEY = "count"
COUNT_FIELD = "count"
INVOKED_FIELD = "invoked_at"
# 14 days: the longest SQS keeps a message, so no record can return after its item expired.
RETENTION_SECONDS = 14 * 86_400
GET_CHUNK = 100  # BatchGetItem's limit of keys per request
WRITE_CHUNK = 25  # BatchWriteItem's limit of requests per request
# Requests per chunk, what DynamoDB left unprocessed asked again after 50, 100, 200, 400 ms.
MAX_REQUESTS = 5
RETRY_BASE_SECONDS = 0.05
MAX_KEY_BYTES = 2048  # DynamoDB's limit for a partition key value


class LedgerError(Exception):
    """Request ids the ledger could not read or write; `found`: what a read did find."""

    def __init__(
        self,
        action: str,
        request_ids: Sequence[str],
        detail: str,
        found: Mapping[str, Invocation] | None = None,
    ) -> None:
        super().__init__(
            f"invocation ledger: {len(request_ids)} request ids not {action}: {detail}"
        )
        self.request_ids = tuple(request_ids)
        self.found: dict[str, Invocation] = dict(found or {})


@dataclass(frozen=True, slots=True)
class Invocation:
    """A Lambda invocation we made: the attempt it was, and when (epoch seconds, if known)."""

    count: int
    at: float | None = None


class InvocationLedger(Protocol):
    """Request id of a Lambda invocation we made -> the attempt it was; raises LedgerError."""

    def invocations(self, request_ids: Collection[str]) -> dict[str, Invocation]: ...
    def record(self, counts: Mapping[str, int], *, now: float) -> None: ...


def _key(request_id: str) -> dict[str, Any]:
    return to_item({"pk": f"{KEY_PREFIX}{request_id}", "sk": SORT_KEY})


def _request_id(key: Mapping[str, Any]) -> str:
    return str(from_item(key)["pk"]).removeprefix(KEY_PREFIX)


def _storable(request_id: str) -> bool:
    """Whether the id fits a partition key (a forged record's may not, failing its request)."""
    return len(f"{KEY_PREFIX}{request_id}".encode()) <= MAX_KEY_BYTES


def _invocation(item: Mapping[str, Any]) -> Invocation | None:
    with contextlib.suppress(TypeError, ArithmeticError):
        count, at = map(from_item(item).get, (COUNT_FIELD, INVOKED_FIELD))
        if isinstance(count, Decimal) and count.is_finite() and count == int(count):
            when = float(at) if isinstance(at, Decimal) and at.is_finite() else None
            return Invocation(int(count), when)
    return None  # not an item this ledger wrote: no count known


class DynamoLedger:
    """The ledger in the breaker's DynamoDB table, what comes back unprocessed retried."""

    def __init__(
        self,
        dynamodb: Callable[[], Any],
        table: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._make = dynamodb
        self._table = table
        self._sleep = sleep

    @functools.cached_property
    def _db(self) -> Any:
        return self._make()

    def invocations(self, request_ids: Collection[str]) -> dict[str, Invocation]:
        """One BatchGetItem per 100 distinct ids; an id too long to be a key is unknown."""
        keys = [_key(request_id) for request_id in sorted(filter(_storable, set(request_ids)))]
        found: dict[str, Invocation] = {}
        errors: list[str] = []
        failed = self._in_chunks(lambda keys: self._get(keys, found), keys, GET_CHUNK, errors)
        if failed:
            raise LedgerError("read", failed, errors[-1], found)
        return found

    def record(self, counts: Mapping[str, int], *, now: float) -> None:
        """One BatchWriteItem per 25 ids, invoked `now`, expiring RETENTION_SECONDS later."""
        expires, invoked = math.ceil(now + RETENTION_SECONDS), Decimal(str(round(now, 3)))
        failed = [request_id for request_id in counts if not _storable(request_id)]
        errors = ["request id too long for a key"] if failed else []
        items = [
            _key(request_id)
            | to_item({COUNT_FIELD: int(count), INVOKED_FIELD: invoked, "expires_at": expires})
            for request_id, count in sorted(counts.items())
            if _storable(request_id)
        ]
        failed += self._in_chunks(self._write, items, WRITE_CHUNK, errors)
        if failed:
            raise LedgerError("written", failed, errors[-1])

    def _get(self, keys: list[Any], found: dict[str, Invocation]) -> list[Any]:
        request = {
            "Keys": keys,
            "ConsistentRead": True,
            "ProjectionExpression": "pk, #count, #at",
            "ExpressionAttributeNames": {"#count": COUNT_FIELD, "#at": INVOKED_FIELD},
        }
        response = self._db.batch_get_item(RequestItems={self._table: request})
        for item in response.get("Responses", {}).get(self._table, []):
            invocation = _invocation(item)
            if invocation is not None:
                found[_request_id(item)] = invocation
        return list(response.get("UnprocessedKeys", {}).get(self._table, {}).get("Keys", []))

    def _write(self, items: list[Any]) -> list[Any]:
        puts = [{"PutRequest": {"Item": item}} for item in items]
        response = self._db.batch_write_item(RequestItems={self._table: puts})
        left = response.get("UnprocessedItems", {}).get(self._table, [])
        return [put["PutRequest"]["Item"] for put in left]

    def _in_chunks(
        self, send: Callable[[list[Any]], list[Any]], items: list[Any], size: int, errors: list[str]
    ) -> list[str]:
        """Send `items` `size` at a time, then what comes back unprocessed; the ids still left."""
        left: list[Any] = []
        for start in range(0, len(items), size):
            pending = items[start : start + size]
            for attempt in range(MAX_REQUESTS):
                if attempt:
                    self._sleep(RETRY_BASE_SECONDS * 2 ** (attempt - 1))
                try:
                    pending = send(pending)
                except (ClientError, BotoCoreError) as error:
                    errors.append(f"{type(error).__name__}: {error}")
                    break
                if not pending:
                    break
            else:
                errors.append(f"still unprocessed after {MAX_REQUESTS} requests")
            left += pending
        return [_request_id(key) for key in left]


class MemoryLedger:
    """The worker's ledger, in memory (thread-safe): entries expire as DynamoDB's would."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, Invocation] = {}

    def invocations(self, request_ids: Collection[str]) -> dict[str, Invocation]:
        with self._lock:
            return {
                request_id: self._entries[request_id]
                for request_id in request_ids
                if request_id in self._entries
            }

    def record(self, counts: Mapping[str, int], *, now: float) -> None:
        with self._lock:
            for request_id, count in counts.items():
                self._entries.pop(request_id, None)  # oldest first: expiry pops from the front
                self._entries[request_id] = Invocation(int(count), now)
            expired = now - RETENTION_SECONDS
            while self._entries:
                oldest = next(iter(self._entries))
                if (self._entries[oldest].at or 0.0) > expired:
                    break
                del self._entries[oldest]


def invocation_ledger(
    env: Mapping[str, str], *, session: boto3.Session | None = None
) -> DynamoLedger | None:
    """The Lambda's ledger when the template named its table, else None."""
    table = resource_name(env, LEDGER_TABLE_VARIABLE, TABLE_NAME_PATTERN, TABLE_NAME_RULE)
    if table is None:
        return None
    return DynamoLedger(lambda: (session or boto3).client("dynamodb"), table)
