"""Batched writes to SQS, 10 entries a request, with every failure mapped back to the record:
up to `concurrency` requests at once (a FIFO queue's one at a time, to keep a group's order),
their payload in flight bounded (a request costs three times its payload in memory)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError

from dlq_replay.core.messages import OutboundMessage, in_order_per_key, run_tasks, sized_batches

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.type_defs import MessageTypeDef

MAX_BATCH_ENTRIES = 10  # SendMessageBatch's limits per request
MAX_BATCH_BYTES = 1_048_576
MAX_IN_FLIGHT_BYTES = MAX_BATCH_BYTES


@dataclass(frozen=True, slots=True)
class SendFailure:
    """Why a copy was not confirmed written. `permanent`: SQS refused the message itself.
    `unconfirmed`: the request failed after it may have reached SQS, so the copy may exist."""

    code: str
    message: str
    permanent: bool
    unconfirmed: bool = False


def pack(messages: Sequence[OutboundMessage]) -> Iterator[list[OutboundMessage]]:
    """Requests of ≤ 10 entries and ≤ 1 MiB, in order (a message too big goes alone)."""
    return (request for request, _ in _sized_requests(messages))


_Request = tuple[list[OutboundMessage], int]  # one SendMessageBatch's messages, their bytes


def _sized_requests(messages: Sequence[OutboundMessage]) -> Iterator[_Request]:
    return sized_batches(messages, attrgetter("size_bytes"), MAX_BATCH_ENTRIES, MAX_BATCH_BYTES)


class BatchSender:
    def __init__(
        self, sqs: SQSClient, concurrency: int = 1, max_in_flight_bytes: int = MAX_IN_FLIGHT_BYTES
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        self._sqs = sqs
        self._concurrency = concurrency
        self._budget = _ByteBudget(max_in_flight_bytes)

    def send(self, messages: Sequence[OutboundMessage]) -> dict[str, SendFailure]:
        by_queue: dict[str, list[OutboundMessage]] = {}
        for message in messages:
            by_queue.setdefault(message.queue_url, []).append(message)
        requests = [
            (url, sized) for url, queued in by_queue.items() for sized in _sized_requests(queued)
        ]
        # One task per request of a standard queue; a FIFO queue's requests, in order, are one.
        tasks = in_order_per_key(requests, itemgetter(0))
        failures: dict[str, SendFailure] = {}
        for result in run_tasks(self._send_in_order, tasks, self._concurrency, "send"):
            failures.update(result)
        return failures

    def _send_in_order(self, requests: Sequence[tuple[str, _Request]]) -> dict[str, SendFailure]:
        failures: dict[str, SendFailure] = {}
        for queue_url, request in requests:
            failures.update(self._send_request(queue_url, request))
        return failures

    def _send_request(self, queue_url: str, sized: _Request) -> dict[str, SendFailure]:
        request, size = sized
        entries = [message.to_entry(str(index)) for index, message in enumerate(request)]
        try:
            with self._budget.hold(size):
                response: Any = self._sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
        except ClientError as error:
            info = error.response.get("Error", {})
            status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 500)
            failure = SendFailure(
                str(info.get("Code", "ClientError")),
                str(info.get("Message", error)),
                permanent=False,
                unconfirmed=status >= 500,  # a 4xx (throttling included) wrote nothing
            )
        except BotoCoreError as error:
            # Cut off mid-request (HTTPClientError) the write may have happened.
            unconfirmed = isinstance(error, HTTPClientError)
            failure = SendFailure(type(error).__name__, str(error), False, unconfirmed)
        else:
            return {
                request[int(item["Id"])].record_id: SendFailure(
                    str(item.get("Code", "Unknown")),
                    str(item.get("Message", "")),
                    bool(item.get("SenderFault", False)),
                )
                for item in response.get("Failed", [])
            }
        return {message.record_id: failure for message in request}


class _ByteBudget:
    """Bytes that concurrent requests may hold at once; a request waits until its own fit."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._held = 0
        self._changed = threading.Condition()

    @contextmanager
    def hold(self, size: int) -> Iterator[None]:
        size = min(size, self._limit)  # a bigger request goes alone
        with self._changed:
            self._changed.wait_for(lambda: self._held + size <= self._limit)
            self._held += size
        try:
            yield
        finally:
            with self._changed:
                self._held -= size
                self._changed.notify_all()


def delete_messages(
    sqs: SQSClient, queue_url: str, messages: Sequence[MessageTypeDef]
) -> list[str]:
    """DeleteMessageBatch; the ids of the messages SQS did not delete (they come back)."""
    entries = [{"ReceiptHandle": message["ReceiptHandle"]} for message in messages]
    refused = _refused(sqs.delete_message_batch, queue_url, entries)
    return [messages[index]["MessageId"] for index, _ in refused]


def change_visibility(
    sqs: SQSClient, queue_url: str, changes: Sequence[tuple[str, int]]
) -> list[tuple[int, str]]:
    """ChangeMessageVisibilityBatch of (handle, seconds) pairs; (index, code) of each refused."""
    entries = [
        {"ReceiptHandle": handle, "VisibilityTimeout": timeout} for handle, timeout in changes
    ]
    return _refused(sqs.change_message_visibility_batch, queue_url, entries)


def _refused(
    call: Callable[..., Any], queue_url: str, entries: Sequence[dict[str, Any]]
) -> list[tuple[int, str]]:
    """`call` on each run of up to 10 entries (Ids: their indexes in the run); the index and
    error code (or the exception's class) of each entry SQS refused."""
    refused: list[tuple[int, str]] = []
    for start in range(0, len(entries), MAX_BATCH_ENTRIES):
        chunk = entries[start : start + MAX_BATCH_ENTRIES]
        try:
            response = call(
                QueueUrl=queue_url,
                Entries=[{"Id": str(index), **entry} for index, entry in enumerate(chunk)],
            )
        except (ClientError, BotoCoreError) as error:
            refused.extend((start + index, type(error).__name__) for index in range(len(chunk)))
            continue
        failed = response.get("Failed", [])
        refused.extend((start + int(entry["Id"]), str(entry.get("Code"))) for entry in failed)
    return refused
