"""Batched writes to SQS, with every failure mapped back to the record it came from."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from dlq_replay.messages import OutboundMessage

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient

# SendMessageBatch limits: 10 entries and 1 MiB of message payload per request.
MAX_BATCH_ENTRIES = 10
MAX_BATCH_BYTES = 1_048_576


@dataclass(frozen=True, slots=True)
class SendFailure:
    """Why a copy was not written. `permanent` means SQS refused the message itself."""

    code: str
    message: str
    permanent: bool


def pack(messages: Sequence[OutboundMessage]) -> Iterator[list[OutboundMessage]]:
    """Split messages to one queue into requests of ≤ 10 entries and ≤ 1 MiB, keeping order.

    A message too big to share a request goes alone; SQS then judges it.
    """
    request: list[OutboundMessage] = []
    size = 0
    for message in messages:
        message_size = message.size_bytes
        if request and (len(request) == MAX_BATCH_ENTRIES or size + message_size > MAX_BATCH_BYTES):
            yield request
            request, size = [], 0
        request.append(message)
        size += message_size
    if request:
        yield request


class BatchSender:
    """Writes copies with SendMessageBatch, one queue at a time; never SendMessage per record."""

    def __init__(self, sqs: SQSClient) -> None:
        self._sqs = sqs

    def send(self, messages: Sequence[OutboundMessage]) -> dict[str, SendFailure]:
        """Write all messages; the result maps each record id whose copy failed to why."""
        failures: dict[str, SendFailure] = {}
        by_queue: dict[str, list[OutboundMessage]] = {}
        for message in messages:
            by_queue.setdefault(message.queue_url, []).append(message)
        for queue_url, queued in by_queue.items():
            for request in pack(queued):
                failures.update(self._send_request(queue_url, request))
        return failures

    def _send_request(
        self, queue_url: str, request: Sequence[OutboundMessage]
    ) -> dict[str, SendFailure]:
        if not request:
            return {}
        entries = [message.to_entry(str(index)) for index, message in enumerate(request)]
        try:
            response: Any = self._sqs.send_message_batch(QueueUrl=queue_url, Entries=entries)
        except ClientError as error:
            info = error.response.get("Error", {})
            failure = SendFailure(
                str(info.get("Code", "ClientError")), str(info.get("Message", error)), False
            )
            return {message.record_id: failure for message in request}
        except BotoCoreError as error:
            failure = SendFailure(type(error).__name__, str(error), False)
            return {message.record_id: failure for message in request}
        failed: dict[str, SendFailure] = {}
        for item in response.get("Failed", []):
            message = request[int(item["Id"])]
            failed[message.record_id] = SendFailure(
                str(item.get("Code", "Unknown")),
                str(item.get("Message", "")),
                bool(item.get("SenderFault", False)),
            )
        return failed
